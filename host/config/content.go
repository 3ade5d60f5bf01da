package config

import "fmt"

// Content configures the storage of generation content (host/content,
// docs/security.md, "Stored content"): the prompt and completion of a generation, kept for
// GET /generation/content. It is off unless the operator turns it on for
// every account here or an account turns it on for itself.
type Content struct {
	// Store is the default of every account that has not chosen itself
	// (PUT /accounts/:id/store_content); false, the default, stores none.
	Store bool `yaml:"store"`
	// MaxRecordBytes bounds one generation's stored content (its input
	// and output together); larger content is cut to it and marked
	// truncated. 0: DefaultContentRecordBytes.
	MaxRecordBytes int `yaml:"max_record_bytes"`
}

// Bounds of content.max_record_bytes.
const (
	DefaultContentRecordBytes = 1 << 20
	MaxContentRecordBytes     = 16 << 20
	minContentRecordBytes     = 4 << 10
)

// RecordBytes is the bound of one stored record.
func (c Content) RecordBytes() int {
	if c.MaxRecordBytes == 0 {
		return DefaultContentRecordBytes
	}
	return c.MaxRecordBytes
}

func (c Content) check() error {
	if n := c.MaxRecordBytes; n != 0 && (n < minContentRecordBytes || n > MaxContentRecordBytes) {
		return fmt.Errorf("config: content.max_record_bytes: %d: want %d to %d bytes (unset: %d)", n, minContentRecordBytes, MaxContentRecordBytes, DefaultContentRecordBytes)
	}
	return nil
}
