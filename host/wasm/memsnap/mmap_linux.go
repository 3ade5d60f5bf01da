package memsnap

import "syscall"

const mapNoReserve = syscall.MAP_NORESERVE
