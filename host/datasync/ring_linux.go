//go:build linux

package datasync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring ABI (include/uapi/linux/io_uring.h): only what one write
// and fsync at a time need.
const (
	opFsync       = 3          // IORING_OP_FSYNC
	opWrite       = 23         // IORING_OP_WRITE (Linux 5.6)
	sqeIOLink     = 1 << 2     // IOSQE_IO_LINK: the next entry runs after this one succeeded
	ringEntries   = 2          // a write and the sync linked to it
	fsyncDatasync = 1          // IORING_FSYNC_DATASYNC
	offSQRing     = 0          // IORING_OFF_SQ_RING
	offCQRing     = 0x8000000  // IORING_OFF_CQ_RING
	offSQEs       = 0x10000000 // IORING_OFF_SQES
	featSingleMap = 1 << 0     // IORING_FEAT_SINGLE_MMAP
	featRWCurPos  = 1 << 3     // IORING_FEAT_RW_CUR_POS: Linux 5.6, which has IORING_OP_WRITE
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

// ring is an io_uring of two entries (a write and the sync linked to
// it) whose completions signal an eventfd.
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
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, ringEntries, uintptr(unsafe.Pointer(&p)), 0)
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
	if p.features&featRWCurPos == 0 {
		return nil, errors.New("datasync: io_uring without IORING_OP_WRITE (Linux before 5.6)")
	}
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

// sqe is one submission: an operation on the file being synced.
type sqe struct {
	opcode, flags uint8
	off           uint64
	addr          uintptr
	len           uint32
	opFlags       uint32
}

// writeDatasync writes b (if any) at off in f and then fdatasyncs f, as
// one linked chain: the sync runs only if the write wrote all of b. A
// write cut short is finished, and synced, by the caller.
func (r *ring) writeDatasync(f *os.File, b []byte, off int64) (wrote int, err error) {
	sync := sqe{opcode: opFsync, opFlags: fsyncDatasync}
	ops := []sqe{sync}
	if len(b) > 0 {
		ops = []sqe{{opcode: opWrite, flags: sqeIOLink, off: uint64(off), addr: uintptr(unsafe.Pointer(&b[0])), len: uint32(len(b))}, sync}
	}
	res, err := r.do(f, ops)
	runtime.KeepAlive(b) // read by the kernel until the write completed
	if err != nil {
		return 0, err
	}
	if len(b) > 0 {
		switch {
		case res[0] < 0:
			return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.Errno(-res[0])}
		case int(res[0]) < len(b):
			return int(res[0]), nil // the sync was cancelled with the link
		}
	}
	if last := res[len(res)-1]; last < 0 {
		return len(b), &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.Errno(-last)}
	}
	return len(b), nil
}

// do submits ops on f as one chain and waits in the poller until each has
// completed; it returns their results (negative: -errno).
func (r *ring) do(f *os.File, ops []sqe) ([]int32, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	first := r.seq + 1
	r.seq += uint64(len(ops))
	var submitErr error
	// Control keeps f open until the submission has taken its reference
	// to the file (io_uring holds its own until the operations complete).
	if err := rc.Control(func(fd uintptr) { submitErr = r.submit(int(fd), ops, first) }); err != nil {
		return nil, err
	}
	if submitErr != nil {
		return nil, submitErr
	}
	res := make([]int32, len(ops))
	for left := len(ops); left > 0; {
		v, seq, ok := r.reap()
		if !ok {
			var b [8]byte
			if _, err := r.efd.Read(b[:]); err != nil {
				return nil, fmt.Errorf("datasync: waiting for io_uring: %w", err)
			}
			continue
		}
		if seq >= first && seq < first+uint64(len(ops)) {
			res[seq-first] = v
			left--
		} // else: a completion of an earlier, abandoned submission
	}
	return res, nil
}

// submit queues ops on fd, with user data first, first+1, …, and tells
// the kernel. io_uring_enter without waiting returns at once (a write is
// tried inline without blocking, else queued; an fsync always goes to an
// io-wq worker): a raw system call, like sockio's.
func (r *ring) submit(fd int, ops []sqe, first uint64) error {
	tail := atomic.LoadUint32(r.sqTail)
	for i, op := range ops {
		idx := (tail + uint32(i)) & r.sqMask
		e := r.sqes[idx*sqeSize : (idx+1)*sqeSize]
		clear(e)
		e[0], e[1] = op.opcode, op.flags
		binary.LittleEndian.PutUint32(e[4:], uint32(int32(fd)))
		binary.LittleEndian.PutUint64(e[8:], op.off)
		binary.LittleEndian.PutUint64(e[16:], uint64(op.addr))
		binary.LittleEndian.PutUint32(e[24:], op.len)
		binary.LittleEndian.PutUint32(e[28:], op.opFlags)
		binary.LittleEndian.PutUint64(e[32:], first+uint64(i))
		*(*uint32)(unsafe.Add(unsafe.Pointer(r.sqArray), 4*uintptr(idx))) = idx
	}
	n := uint32(len(ops))
	atomic.StoreUint32(r.sqTail, tail+n) // publishes the entries
	for {
		got, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), 0, 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			// Not submitted: take the entries back.
			atomic.StoreUint32(r.sqTail, tail)
			return os.NewSyscallError("io_uring_enter", errno)
		case uint32(got) != n:
			// The kernel took only part of the chain: it runs it, cut at
			// the entry it refused. Wait for nothing more of it.
			return fmt.Errorf("datasync: io_uring_enter took %d of %d entries", got, n)
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
