package fi

import (
	"sync"
	"testing"
)

// SetRegistryForTest replaces the provider registry with provs for the rest
// of the test and restores it in cleanup.
func SetRegistryForTest(tb testing.TB, provs ...Provider) {
	tb.Helper()
	registry.mu.Lock()
	saved := registry.m
	registry.m = nil
	registry.mu.Unlock()
	tb.Cleanup(func() {
		registry.mu.Lock()
		registry.m = saved
		registry.mu.Unlock()
	})
	for _, p := range provs {
		Register(p)
	}
}

// ResetLogForTest forgets the logging environment read so far and the
// handler set by SetLogHandler, now and in cleanup, so that a test can set
// FI_LOG_LEVEL and FI_LOG_PROV with t.Setenv.
func ResetLogForTest(tb testing.TB) {
	tb.Helper()
	reset := func() {
		logConf.once = sync.Once{}
		logDest.Store(nil)
	}
	reset()
	tb.Cleanup(reset)
}

// TostrBits prints v of the bit set type typ ("caps", "op_flags", "mode",
// "msg_order", "mr_mode") exactly as fi_tostr does, as Info.String prints
// it.
func TostrBits(typ string, v uint64) string {
	names := map[string][]bitName{"caps": capNames, "op_flags": opFlagNames, "mode": modeNames,
		"msg_order": orderNames, "mr_mode": mrModeNames}[typ]
	return bitsString(v, names)
}
