package tokenize

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"path"
	"unsafe"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// rankSizes is how many ranks each embedded vocabulary has, to size its map
// once: grown from empty, a 200k-entry map is rebuilt about a dozen times
// on the way and leaves that much garbage behind.
var rankSizes = map[string]int{"cl100k_base": 100256, "o200k_base": 199998}

// embeddedRanks reads the vocabularies embedded by tiktoken-go-loader (the
// "base64-token rank" lines of OpenAI's .tiktoken files), streaming from the
// binary's read-only data: the loader's own reader copies the whole file,
// copies it again as a string, splits it into a slice of every line and
// decodes each token into a buffer of its own, about three times the
// file's size in garbage before the first count.
type embeddedRanks struct{}

func (embeddedRanks) LoadTiktokenBpe(file string) (map[string]int, error) {
	name := path.Base(file)
	f, err := assets.Assets.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ranks := make(map[string]int, rankSizes[name[:len(name)-len(path.Ext(name))]])
	// Every token's bytes go into one arena the keys point into: one
	// object for the collector to mark, not one per token (100–200
	// thousand, every cycle: most of a collection's mark work at idle
	// load). The arena never grows past its first capacity (a key must not
	// move), so it is sized by the file: tokens decode smaller than the
	// lines that hold them; a file larger than it said gets a second arena.
	size := int64(1 << 20)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	arena := make([]byte, 0, size)
	br := bufio.NewReaderSize(f, 64<<10)
	var tok []byte
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("tokenize: %s line %d: %w", name, n, err)
		}
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			sp := bytes.IndexByte(line, ' ')
			if sp < 0 {
				return nil, fmt.Errorf("tokenize: %s line %d: no rank", name, n)
			}
			tok = tok[:cap(tok)]
			if need := base64.StdEncoding.DecodedLen(sp); len(tok) < need {
				tok = make([]byte, need)
			}
			m, err := base64.StdEncoding.Decode(tok, line[:sp])
			if err != nil {
				return nil, fmt.Errorf("tokenize: %s line %d: %w", name, n, err)
			}
			rank, ok := atoi(line[sp+1:])
			if !ok {
				return nil, fmt.Errorf("tokenize: %s line %d: rank %q is not a number", name, n, line[sp+1:])
			}
			if len(arena)+m > cap(arena) {
				arena = make([]byte, 0, max(m, 1<<20))
			}
			arena = append(arena, tok[:m]...)
			ranks[unsafe.String(unsafe.SliceData(arena[len(arena)-m:]), m)] = rank
		}
		if err == io.EOF {
			return ranks, nil
		}
	}
}

// atoi parses a rank: decimal digits only.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
