package gen

import "github.com/gpipe/gpipe/internal/sysmem"

// physicalMemory is the machine's memory in bytes, or 0 where that cannot
// be read; tests set it.
var physicalMemory = sysmem.Physical
