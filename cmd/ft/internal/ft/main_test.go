package ft

import (
	"os"
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

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(Main(append([]string{"ft"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
