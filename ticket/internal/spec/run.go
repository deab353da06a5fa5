package spec

// Run is N values of a sequence that one caller took alone: First,
// First+Stride, …, First+(N-1)·Stride, every one of them unique to the
// caller. Stride is 1 for a run within one block; with block size 1 the
// values are the tickets of one claim, a counter's step (the number of
// servers) apart. A run is what a caller that describes its values as a
// range (tinyid's segments) can use whole: no value between First and the
// last one of the same residue modulo Stride is anyone else's.
type Run struct {
	First, N, Stride uint64
}

// Last is the run's largest value (First for an empty run).
func (r Run) Last() uint64 {
	if r.N == 0 {
		return r.First
	}
	return r.First + (r.N-1)*r.Stride
}
