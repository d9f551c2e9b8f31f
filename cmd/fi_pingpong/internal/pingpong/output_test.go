package pingpong

import (
	"bytes"
	"fmt"
	"github.com/gofabric/gofabric/internal/reftest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHeader(t *testing.T) {
	require.Equal(t, fmt.Sprintf("%-8s%-8s%-9s%-8s%8s %10s%13s%13s\n",
		"bytes", "#sent", "#ack", "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec"), Header)
}

func TestSizeStr(t *testing.T) {
	for v, want := range map[uint64]string{
		0: "0", 64: "64", 384: "384", 1000: "1000", 1023: "1023", 1024: "1k", 1100: "1k", 1536: "1.5k",
		6144: "6k", 10239: "9.9k", 10240: "10k", 12288: "12k", 1048575: "1023k",
		1 << 20: "1m", 1572864: "1.5m", 25165824: "24m", 1 << 30: "1g", 3 << 29: "1.5g", 100 << 30: "100g",
	} {
		require.Equal(t, want, SizeStr(v), "%d", v)
	}
}

func TestCntStr(t *testing.T) {
	for c, want := range map[uint64]string{
		0: "0", 10: "10", 999: "999", 1000: "1k", 1500: "1k", 999999: "999k", 1e6: "1m",
		2147483647: "2b",
	} {
		require.Equal(t, want, CntStr(c), "%d", c)
	}
}

// TestRow checks rows the C tool printed (docs/wire-tcp.md, §1.10 and a loopback
// run), each with the elapsed time that gives its figures.
func TestRow(t *testing.T) {
	tests := []struct {
		size, it, acked int
		us              int64
		want            string
	}{
		{64, 3, 3, 662, "64      3       =3       384         0.00s      0.58     110.33       0.01\n"},
		{256, 3, 3, 48, "256     3       =3       1.5k        0.00s     32.00       8.00       0.12\n"},
		{1 << 20, 3, 3, 3251, "1m      3       =3       6m          0.00s   1935.24     541.83       0.00\n"},
		{0, 2, 2, 12104, "0       2       =2       0           0.01s      0.00    3026.00       0.00\n"},
		{1536, 2, 2, 94, "1.5k    2       =2       6k          0.00s     65.36      23.50       0.04\n"},
		{12288, 2, 2, 122, "12k     2       =2       48k         0.00s    402.89      30.50       0.03\n"},
		{6291456, 2, 2, 85892, "6m      2       =2       24m         0.09s    292.99   21473.00       0.00\n"},
		{64, 10, 10, 28161, "64      10      =10      1.2k        0.03s      0.05    1408.05       0.00\n"},
		// float32 arithmetic: float64 would print 83333.33.
		{64, 6, 6, 1000000, "64      6       =6       768         1.00s      0.00   83333.34       0.00\n"},
		{64, 5, 7, 100, "64      5       -2       640         0.00s      6.40      10.00       0.10\n"},
		{64, 5000, 3000, 100, "64      5k      +2k      625k        0.00s   6400.00       0.01     100.00\n"},
		// elapsed 0: glibc's spellings.
		{0, 2, 2, 0, "0       2       =2       0           0.00s      -nan       0.00        inf\n"},
		{64, 2, 2, 0, "64      2       =2       256         0.00s       inf       0.00        inf\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Fields(tt.want)[0]+"/"+fmt.Sprint(tt.us), func(t *testing.T) {
			got := Row(tt.size, tt.it, tt.acked, time.Duration(tt.us)*time.Microsecond+999*time.Nanosecond)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTableHeaderOnce(t *testing.T) {
	var b bytes.Buffer
	tab := table{w: &b}
	tab.row(64, 0, 0, time.Millisecond)
	require.Empty(t, b.String(), "no row and no header for 0 iterations")
	tab.row(64, 1, 1, time.Millisecond)
	tab.row(256, 1, 1, time.Millisecond)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, Header, lines[0]+"\n")
}

// TestRowNumbersMatchC prints the numeric columns with glibc's printf for
// many inputs and compares.
func TestRowNumbersMatchC(t *testing.T) {
	gcc := reftest.Tool(t, "gcc", "gcc")
	type in struct {
		size, it int
		us       int64
	}
	var ins []in
	for _, it := range []int{1, 3, 6, 7, 10, 1000, 60422, 2147483647} {
		for _, us := range []int64{0, 1, 2, 662, 1000000, 1000003, 987654321} {
			for _, size := range []int{0, 1, 64, 1536, 1 << 20, 6291456} {
				ins = append(ins, in{size, it, us})
			}
		}
	}
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stdint.h>\nstatic void row(uint64_t size, long it, int64_t us) {\n" +
		"\tuint64_t total = (uint64_t)it * size * 2;\n" +
		"\tfloat u = ((float)us / (float)it) / 2.0f;\n" +
		"\tprintf(\"%8.2fs%10.2f%11.2f%11.2f\\n\", us / 1000000.0, total / (1.0 * us), u, 1.0 / u);\n}\nint main(void) {\n")
	var want strings.Builder
	for _, i := range ins {
		fmt.Fprintf(&src, "\trow(%d, %d, %d);\n", i.size, i.it, i.us)
		want.WriteString(rowNumbers(uint64(i.it)*uint64(i.size)*2, i.it, i.us))
	}
	src.WriteString("\treturn 0;\n}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "row.c"), []byte(src.String()), 0o600))
	out, err := exec.Command(gcc, "-O0", "-o", filepath.Join(dir, "row"), filepath.Join(dir, "row.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := exec.Command(filepath.Join(dir, "row")).Output()
	require.NoError(t, err)
	require.Equal(t, string(got), want.String())
}
