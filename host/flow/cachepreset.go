package flow

import (
	"encoding/json"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/keys"
)

// cachePresets are the request's pipeline.Extra.Presets: the response
// cache default of its key, or else of its account (docs/response-cache.md,
// "Turning it on"), as a plugins[] item of the cache plugin the account
// runs (manifest.RoleCache: the account's own module of that role, else
// the gateway's). None when neither set one or no cache is installed.
func (s *Core) cachePresets(k *keys.Key) []string {
	opts := k.ResponseCache
	if len(opts) == 0 && s.Keys != nil {
		opts = s.Keys.ResponseCache(k.AccountID)
	}
	if len(opts) == 0 {
		return nil
	}
	id := s.Modules.RolePlugin(k.AccountID, manifest.RoleCache)
	if id == "" {
		return nil
	}
	m := map[string]json.RawMessage{}
	if json.Unmarshal(opts, &m) != nil {
		return nil
	}
	m["id"], _ = json.Marshal(id)
	item, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return []string{string(item)}
}
