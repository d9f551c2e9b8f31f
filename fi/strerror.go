package fi

import "strconv"

//go:generate go run ./internal/mkstrerror -o zstrerror.go

// strerror returns fi_strerror(3)'s text for e. Like fi_strerror it takes
// the absolute value: codes below 256 give the host's strerror text
// (glibc's, in the C locale), 256 and up give libfabric's own, and codes past
// libfabric's last give FI_EOTHER's text. The one exception is INT_MIN,
// whose absolute value overflows: fi_strerror passes it on to strerror,
// which gives "Unknown error -2147483648". That text, and the same for
// math.MinInt, are the only ones strerror allocates.
func strerror(e Errno) string {
	n := e
	if n < 0 {
		n = -n
	}
	switch {
	case n < 0 || e == -1<<31:
		return "Unknown error " + strconv.Itoa(int(e))
	case int(n) < len(strerrorTable):
		return strerrorTable[n]
	}
	return strerrorBeyond
}
