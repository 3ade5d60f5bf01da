package gateway

import (
	"strconv"
	"time"

	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/store"
)

// bucketModelsListed holds, by model id, when this gateway (or another of
// its cluster) first listed the model: Unix seconds in decimal.
var bucketModelsListed = []byte("models_first_listed")

// stampCreated sets the Created of every model of cat the configuration
// gives none to the time the gateway first listed it, recorded in the
// store the first time, so GET /models' created is a real date that a
// restart or a reload does not move (OpenRouter's is when the model was
// added; clients sort "newest models" by it). cat is not yet published.
func (g *Gateway) stampCreated(cat *catalog.Catalog, now time.Time) error {
	var unseen []*catalog.Model
	_ = g.DB.View(func(tx store.Tx) error {
		b := tx.Bucket(bucketModelsListed)
		for _, m := range cat.Models {
			if m.Created != 0 {
				continue
			}
			if m.Created = listedAt(b, m.ID); m.Created == 0 {
				unseen = append(unseen, m)
			}
		}
		return nil
	})
	if len(unseen) == 0 {
		return nil
	}
	return g.DB.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketModelsListed)
		if err != nil {
			return err
		}
		for _, m := range unseen {
			// Another gateway of the cluster may have listed it since.
			if m.Created = listedAt(b, m.ID); m.Created != 0 {
				continue
			}
			m.Created = now.Unix()
			if err := b.Put([]byte(m.ID), strconv.AppendInt(nil, m.Created, 10)); err != nil {
				return err
			}
		}
		return nil
	})
}

// listedAt is when the model id was first listed by b's record, 0 when
// b (which may be nil) has none.
func listedAt(b store.Bucket, id string) int64 {
	if b == nil {
		return 0
	}
	n, err := strconv.ParseInt(string(b.Get([]byte(id))), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
