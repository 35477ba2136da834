// Package edgetest holds what the tests of the ingest packages share: writers
// of the inputs they read, and checks of what the readers give back.
package edgetest
