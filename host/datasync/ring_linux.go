//go:build linux

package datasync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring ABI (include/uapi/linux/io_uring.h): only what one fsync
// at a time needs.
const (
	opFsync       = 3          // IORING_OP_FSYNC
	fsyncDatasync = 1          // IORING_FSYNC_DATASYNC
	offSQRing     = 0          // IORING_OFF_SQ_RING
	offCQRing     = 0x8000000  // IORING_OFF_CQ_RING
	offSQEs       = 0x10000000 // IORING_OFF_SQES
	featSingleMap = 1 << 0     // IORING_FEAT_SINGLE_MMAP
	registerEFD   = 4          // IORING_REGISTER_EVENTFD
	sqeSize       = 64
	cqeSize       = 16
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// ring is an io_uring of one entry whose completions signal an eventfd.
type ring struct {
	fd             int
	sqMem, cqMem   []byte // cqMem aliases sqMem with a single mapping
	sqes           []byte
	sqTail         *uint32
	sqMask         uint32
	sqArray        *uint32
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []byte
	efd            *os.File // the eventfd, read in the poller
	seq            uint64   // user_data of the last submission
}

func newRing() (*ring, error) {
	var p params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, os.NewSyscallError("io_uring_setup", errno)
	}
	r := &ring{fd: int(fd)}
	ok := false
	defer func() {
		if !ok {
			r.close()
		}
	}()
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*cqeSize)
	if p.features&featSingleMap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqMem, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	r.cqMem = r.sqMem
	if p.features&featSingleMap == 0 {
		if r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			r.cqMem = nil
			return nil, err
		}
	}
	if r.sqes, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries*sqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	r.sqTail = u32(r.sqMem, p.sqOff.tail)
	r.sqMask = *u32(r.sqMem, p.sqOff.ringMask)
	r.sqArray = u32(r.sqMem, p.sqOff.array)
	r.cqHead = u32(r.cqMem, p.cqOff.head)
	r.cqTail = u32(r.cqMem, p.cqOff.tail)
	r.cqMask = *u32(r.cqMem, p.cqOff.ringMask)
	r.cqes = r.cqMem[p.cqOff.cqes:]

	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	r.efd = os.NewFile(uintptr(efd), "io_uring eventfd") // non-blocking: read in the poller
	fd32 := int32(efd)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerEFD, uintptr(unsafe.Pointer(&fd32)), 1, 0, 0); errno != 0 {
		return nil, os.NewSyscallError("io_uring_register", errno)
	}
	ok = true
	return r, nil
}

func u32(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }

// datasync submits one IORING_OP_FSYNC of f with IORING_FSYNC_DATASYNC and
// waits for its completion in the poller.
func (r *ring) datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	r.seq++
	var submitErr error
	// Control keeps f open until the submission has taken its reference
	// to the file (io_uring holds its own until the operation completes).
	if err := rc.Control(func(fd uintptr) { submitErr = r.submit(int(fd)) }); err != nil {
		return err
	}
	if submitErr != nil {
		return submitErr
	}
	for {
		res, seq, ok := r.reap()
		if ok && seq == r.seq {
			if res < 0 {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.Errno(-res)}
			}
			return nil
		}
		if ok {
			continue // a completion of an earlier, abandoned submission
		}
		var b [8]byte
		if _, err := r.efd.Read(b[:]); err != nil {
			return fmt.Errorf("datasync: waiting for io_uring: %w", err)
		}
	}
}

// submit queues the fsync of fd and tells the kernel. io_uring_enter with
// no wait returns at once (an fsync always goes to an io-wq worker).
func (r *ring) submit(fd int) error {
	tail := atomic.LoadUint32(r.sqTail)
	idx := tail & r.sqMask
	sqe := r.sqes[idx*sqeSize : (idx+1)*sqeSize]
	clear(sqe)
	sqe[0] = opFsync
	binary.LittleEndian.PutUint32(sqe[4:], uint32(int32(fd)))
	binary.LittleEndian.PutUint32(sqe[28:], fsyncDatasync)
	binary.LittleEndian.PutUint64(sqe[32:], r.seq)
	*(*uint32)(unsafe.Add(unsafe.Pointer(r.sqArray), 4*uintptr(idx))) = idx
	atomic.StoreUint32(r.sqTail, tail+1) // publishes the entry
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 0, 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			// Not submitted: take the entry back.
			atomic.StoreUint32(r.sqTail, tail)
			return os.NewSyscallError("io_uring_enter", errno)
		case n != 1:
			atomic.StoreUint32(r.sqTail, tail)
			return errors.New("datasync: io_uring_enter submitted nothing")
		}
		return nil
	}
}

// reap takes the next completion, if there is one.
func (r *ring) reap() (res int32, seq uint64, ok bool) {
	head := atomic.LoadUint32(r.cqHead)
	if head == atomic.LoadUint32(r.cqTail) {
		return 0, 0, false
	}
	cqe := r.cqes[(head&r.cqMask)*cqeSize:]
	seq = binary.LittleEndian.Uint64(cqe[0:])
	res = int32(binary.LittleEndian.Uint32(cqe[8:]))
	atomic.StoreUint32(r.cqHead, head+1)
	return res, seq, true
}

func (r *ring) close() error {
	if r.efd != nil {
		r.efd.Close()
	}
	if r.sqes != nil {
		_ = unix.Munmap(r.sqes)
	}
	if r.cqMem != nil && &r.cqMem[0] != &r.sqMem[0] {
		_ = unix.Munmap(r.cqMem)
	}
	if r.sqMem != nil {
		_ = unix.Munmap(r.sqMem)
	}
	return unix.Close(r.fd)
}
