package vecindex

import "golang.org/x/sys/cpu"

// The dot product is most of the cost of a search and of a graph build
// (a profile of a 20k-node build at 256 dimensions: 78% in dot), and Go
// does not vectorise loops: with AVX2 and FMA it is the assembly's
// (dot_amd64.s: 32 floats a step in four 8-wide accumulators).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotAVX2(a, b []float32) float32

func dot(a, b []float32) float32 {
	if useAVX2 {
		b = b[:len(a)] // the assembly reads len(a) of each
		return dotAVX2(a, b)
	}
	return dotGo(a, b)
}
