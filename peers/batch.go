package peers

// BatchProblem is what is wrong with tinyid's batchSize.
type BatchProblem uint8

const (
	BatchOK        BatchProblem = iota
	BatchEmpty                  // given, with no value
	BatchNotNumber              // not decimal digits
	BatchZero                   // 0, or a negative number
)

// ParseBatchSize reads tinyid's batchSize: decimal digits, optionally after a
// sign, capped at limit (at least 1) as tinyid's server caps it at its
// batch.size.max. Zero and negative sizes, which tinyid answers with
// nothing, are BatchZero. It never overflows and allocates nothing.
func ParseBatchSize(b []byte, limit int) (int, BatchProblem) {
	if len(b) == 0 {
		return 0, BatchEmpty
	}
	neg := false
	switch b[0] {
	case '-':
		neg, b = true, b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, BatchNotNumber
	}
	n, capped := 0, false
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, BatchNotNumber
		}
		if !capped {
			n = n*10 + int(c-'0')
			capped = n > limit
		}
	}
	switch {
	case neg && (n != 0 || capped), n == 0 && !capped:
		return 0, BatchZero
	case capped:
		return limit, BatchOK
	}
	return n, BatchOK
}
