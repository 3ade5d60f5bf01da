package server

import (
	"context"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/keys"
)

// SubChat is, for tests, the CallEnv.Chat a request of key with id
// parentID would carry, and what its sub-requests added to the request's
// cost so far.
func (s *Server) SubChat(key *keys.Key, parentID string) (func(context.Context, []byte) (int, []byte, error), func() billing.Nanos) {
	return s.Core.SubChat(key, parentID)
}
