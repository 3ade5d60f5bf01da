package rewrite

import (
	"errors"
	"fmt"
)

// MaxLocals bounds one function's locals (V8's limit): no compiler makes
// more, and wazero allocates per declared local.
const MaxLocals = 50_000

// ErrCounts is CheckCounts' refusal.
var ErrCounts = errors.New("module declares more items than it holds")

// CheckCounts refuses a module whose vectors declare more items than
// their section has bytes left (every item takes at least one byte), or a
// function with more than MaxLocals locals. wazero sizes its tables from
// a declared count before it reads the items: a 20-byte module declaring
// a type of 2^32 parameters has it allocate 32 GiB, which ends the process
// (Go's fatal out-of-memory error cannot be recovered). Tenants publish
// modules, so every binary passes here before wazero sees it. Only the
// counts, and what must be read to reach them, are read: the rest of the
// module is wazero's to validate.
func CheckCounts(bin []byte) error {
	secs, err := sections(bin)
	if err != nil {
		return nil // not a module this reads; wazero refuses it on its own
	}
	for _, s := range secs {
		r := reader{b: s.body}
		switch s.id {
		case 0:
			err = checkCustom(&r)
		case 1:
			err = checkTypes(&r)
		case 2, 3, 4, 5, 6, 7, 9, 11:
			_, err = r.count(1)
		case 10:
			err = checkCode(&r)
		case 12: // data count: the data section has at least that many bytes
			if n := r.u(); r.err == nil && n > uint64(len(bin)) {
				err = fmt.Errorf("%w: data count %d", ErrCounts, n)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// count reads a vector's count and checks that the rest of the section
// can hold that many items of at least min bytes each.
func (r *reader) count(min uint64) (uint64, error) {
	n := r.u()
	if r.err != nil {
		return 0, nil // malformed: wazero says so
	}
	if rest := uint64(len(r.b) - r.i); n > rest/min {
		return 0, fmt.Errorf("%w: a vector of %d items in %d bytes", ErrCounts, n, rest)
	}
	return n, nil
}

// checkTypes checks every function type's parameter and result counts.
func checkTypes(r *reader) error {
	n, err := r.count(3) // 0x60 and two counts
	for k := uint64(0); k < n && err == nil && r.err == nil; k++ {
		if r.byte() != 0x60 {
			return nil // not a function type this reads: wazero's to refuse
		}
		for i := 0; i < 2 && err == nil; i++ { // parameters, results
			var m uint64
			if m, err = r.count(1); err == nil {
				r.skip(int(m)) // one byte a value type
			}
		}
	}
	return err
}

// checkCode checks every function's local declarations.
func checkCode(r *reader) error {
	n, err := r.count(2) // a size and a local-group count
	for k := uint64(0); k < n && err == nil && r.err == nil; k++ {
		size := r.u()
		if r.err != nil || size > uint64(len(r.b)-r.i) {
			return nil
		}
		fr := reader{b: r.b[r.i : r.i+int(size)]}
		r.i += int(size)
		groups, gerr := fr.count(2)
		locals := uint64(0)
		for g := uint64(0); g < groups && gerr == nil && fr.err == nil; g++ {
			locals += fr.u()
			fr.byte()
			if locals > MaxLocals {
				return fmt.Errorf("%w: a function declares more than %d locals", ErrCounts, MaxLocals)
			}
		}
		err = gerr
	}
	return err
}

// checkCustom checks the name section's maps (wazero decodes it for stack
// traces); other custom sections are not read.
func checkCustom(r *reader) error {
	if string(r.name()) != "name" || r.err != nil {
		return nil
	}
	for r.i < len(r.b) && r.err == nil {
		id := r.byte()
		size := r.u()
		if r.err != nil || size > uint64(len(r.b)-r.i) {
			return nil
		}
		sr := reader{b: r.b[r.i : r.i+int(size)]}
		r.i += int(size)
		switch id {
		case 1: // function names: vec(index name)
			if _, err := sr.count(2); err != nil {
				return err
			}
		case 2: // local names: vec(index vec(index name))
			n, err := sr.count(2)
			for k := uint64(0); k < n && err == nil && sr.err == nil; k++ {
				sr.u()
				var m uint64
				if m, err = sr.count(2); err == nil {
					for j := uint64(0); j < m && sr.err == nil; j++ {
						sr.u()
						sr.name()
					}
				}
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
