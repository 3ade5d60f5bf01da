package flow

import (
	"testing"
	"time"
)

// TestFirstCheckpointsSpread: streams that start together do not all
// checkpoint together, and none waits longer than checkpointEvery for its
// first checkpoint (a crash loses at most that much of a stream's usage).
func TestFirstCheckpointsSpread(t *testing.T) {
	now := time.Now()
	const streams = 1000
	buckets := map[time.Duration]int{} // first checkpoints per 250 ms
	for range streams {
		last := firstCheckpoint(now)
		due := last.Add(checkpointEvery).Sub(now) // when the first checkpoint is due
		if due <= checkpointEvery/2 || due > checkpointEvery {
			t.Fatalf("first checkpoint due %s after the start, want in (%s, %s]", due, checkpointEvery/2, checkpointEvery)
		}
		buckets[due/(250*time.Millisecond)]++
	}
	// 2.5 s of spread in 250 ms buckets: ten buckets, 100 streams each on
	// average; all 1,000 at the same moment is what this prevents.
	if len(buckets) < 8 {
		t.Fatalf("1,000 streams' first checkpoints fall in %d of 10 quarter-seconds: %v", len(buckets), buckets)
	}
	for b, n := range buckets {
		if n > streams/4 {
			t.Fatalf("%d of %d streams checkpoint first in the same quarter-second (%v)", n, streams, b)
		}
	}
}
