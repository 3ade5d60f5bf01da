//go:build !wasip1

package sdk

import (
	"errors"
	"math"
	"sync"
)

// Metric, off Wasm (a plugin's handlers under `go test`), records the
// addition in memory for MetricSum instead of calling the host; it checks
// only what needs no manifest (a finite value).
func Metric(name string, value float64) error {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return errors.New("metric " + name + ": not a finite number")
	}
	testMetrics.Lock()
	defer testMetrics.Unlock()
	if testMetrics.sum == nil {
		testMetrics.sum = map[string]float64{}
	}
	testMetrics.sum[name] += value
	return nil
}

// MetricSum is, off Wasm, the sum of the values Metric added to name in
// this process: a handler's test checks what it counted.
func MetricSum(name string) float64 {
	testMetrics.Lock()
	defer testMetrics.Unlock()
	return testMetrics.sum[name]
}

var testMetrics struct {
	sync.Mutex
	sum map[string]float64
}
