package ft

import (
	"flag"
	"os"
	"strconv"
	"testing"

	// The Go side of the interop tests runs this test binary as ft: it
	// needs every provider, as cmd/ft links them.
	_ "github.com/gofabric/gofabric/providers/all"
	"go.uber.org/goleak"
)

// asMainEnv makes the test binary run as ft (Main with its arguments)
// instead of running tests: the interop tests start the Go side of a pair
// this way, a real process built with the test's flags (-race).
const asMainEnv = "GOFABRIC_FT_AS_MAIN"

// pairsAtOnce is how many pairs the interop tests run at once unless
// -parallel says otherwise: a pair mostly waits (two processes start, C
// libfabric loads its providers, a C pingpong writes its 1 GiB buffer),
// so on a 2-CPU host 4 at a time took cmd/ft's tests 330 s instead of
// 430 with go test's default of GOMAXPROCS. The verbs pairs, which need
// a guest's memory per pair, take at most verbsPairsAtOnce of them.
const pairsAtOnce = 4

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(Main(append([]string{"ft"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	// The default only: m.Run parses the command line, where -parallel
	// (go test passes it on as -test.parallel) overrides this.
	if err := flag.Set("test.parallel", strconv.Itoa(pairsAtOnce)); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m)
}
