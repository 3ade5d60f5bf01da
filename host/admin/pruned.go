package admin

import (
	"fmt"
	"time"

	"github.com/switchyard/switchyard/host/config"
)

// prunedMessage is the 404 message of an id whose record was deleted for
// its age (retention.generations), "" when the id does not say so. The id
// carries its creation time, so the answer is the same whichever account
// asks: it tells nothing about whose record it was.
func (h *handlers) prunedMessage(id string) string {
	created, st, ok, err := h.l.Pruned(id)
	if err != nil || !ok {
		return ""
	}
	return fmt.Sprintf("Generation not found: %q was created at %s, older than the retention period of generation records (%s), and has been deleted. "+
		"Its cost still counts in GET /api/v1/activity (daily totals) and in the key's and account's usage.",
		id, created.Format(time.RFC3339), config.FormatDuration(st.Retention))
}
