package sdk

// VectorMatch is VectorSearch's answer: the entry's id, its cosine
// similarity to the query, and its age. (Outside the wasip1 files so a
// plugin's logic can be tested on the host.)
type VectorMatch struct {
	ID         string
	Similarity float64
	AgeSeconds int64
}
