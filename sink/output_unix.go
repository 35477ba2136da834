//go:build unix

package sink

import (
	"errors"
	"os"
	"syscall"
)

// lockWriting takes the exclusive flock that says a temporary file's writer
// is alive; the lock goes with the file's descriptor, so a killed writer's
// lock is gone. Where the file system has no locks the file goes unlocked:
// removeStale then leaves it to the PID check.
func lockWriting(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// processAlive says whether a process pid exists here (one of another user
// too: kill answers EPERM).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeUnlocked removes path if no one holds its lock, holding the lock
// while it does.
func removeUnlocked(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // a writer holds it, or the file system cannot say
	}
	_ = os.Remove(path)
}
