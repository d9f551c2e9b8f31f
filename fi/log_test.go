package fi_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// logSetup sets FI_LOG_LEVEL and FI_LOG_PROV (unset when empty) for the
// test and returns a buffer receiving the records of every logger as text.
func logSetup(tb testing.TB, level, prov string) *bytes.Buffer {
	tb.Helper()
	if level != "" {
		tb.Setenv("FI_LOG_LEVEL", level)
	} else {
		tb.Setenv("FI_LOG_LEVEL", "") // restore the outer value afterwards
	}
	if prov != "" {
		tb.Setenv("FI_LOG_PROV", prov)
	} else {
		tb.Setenv("FI_LOG_PROV", "")
	}
	fi.ResetLogForTest(tb)
	var buf bytes.Buffer
	fi.SetLogHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	return &buf
}

func TestLogLevel(t *testing.T) {
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, fi.LevelTrace, slog.LevelWarn}
	for _, tc := range []struct {
		env  string
		want []bool // logged at debug, info, trace, warn
	}{
		{"warn", []bool{false, false, false, true}},
		{"trace", []bool{false, false, true, true}},
		{"info", []bool{false, true, true, true}},
		{"debug", []bool{true, true, true, true}},
		{"DeBuG", []bool{true, true, true, true}},
		// Unset or unknown: the application's handler decides alone.
		{"", []bool{true, true, true, true}},
		{"loud", []bool{true, true, true, true}},
	} {
		t.Run(tc.env, func(t *testing.T) {
			buf := logSetup(t, tc.env, "")
			log := fi.Logger("tcp")
			for i, l := range levels {
				buf.Reset()
				log.Log(context.Background(), l, "m")
				require.Equal(t, tc.want[i], buf.Len() > 0, "level %v", l)
			}
		})
	}
}

func TestLogDefaultHandler(t *testing.T) {
	for _, tc := range []struct {
		env  string
		warn bool
	}{
		{"", false}, // libfabric 1.17 logs nothing with FI_LOG_LEVEL unset
		{"warn", true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			logSetup(t, tc.env, "")
			fi.SetLogHandler(nil)
			log := fi.Logger("tcp")
			require.Equal(t, tc.warn, log.Enabled(context.Background(), slog.LevelWarn))
			require.False(t, log.Enabled(context.Background(), slog.LevelDebug))
		})
	}
}

func TestLogProv(t *testing.T) {
	for _, tc := range []struct {
		env    string
		logged map[string]bool
	}{
		{"", map[string]bool{"tcp": true, "shm": true, "tcp;ofi_rxm": true}},
		{"tcp", map[string]bool{"tcp": true, "shm": false, "tcp;ofi_rxm": true}},
		{"shm,udp", map[string]bool{"tcp": false, "shm": true, "udp": true}},
		{"^shm", map[string]bool{"tcp": true, "shm": false, "core": true}},
		{"^tcp,udp", map[string]bool{"tcp": false, "udp": false, "shm": true, "tcp;ofi_rxm": false}},
		{"ofi_rxm", map[string]bool{"tcp": false, "tcp;ofi_rxm": true}},
	} {
		t.Run(tc.env, func(t *testing.T) {
			buf := logSetup(t, "warn", tc.env)
			for prov, want := range tc.logged {
				buf.Reset()
				fi.Logger(prov).Warn("m")
				require.Equal(t, want, buf.Len() > 0, "provider %s", prov)
			}
		})
	}
}

func TestLogRecord(t *testing.T) {
	buf := logSetup(t, "debug", "")
	log := fi.Logger("tcp")
	log.With("ep", 3).WithGroup("cm").Warn("connect failed", "errno", 111)
	require.Equal(t, "level=WARN msg=\"connect failed\" prov=tcp ep=3 cm.errno=111\n", buf.String())

	// A logger made before SetLogHandler follows the new handler.
	var other bytes.Buffer
	fi.SetLogHandler(slog.NewJSONHandler(&other, nil))
	buf.Reset()
	log.Info("hello")
	require.Zero(t, buf.Len())
	require.Contains(t, other.String(), `"msg":"hello","prov":"tcp"`)

	// The handler's own level still applies.
	other.Reset()
	log.Debug("quiet")
	require.Zero(t, other.Len())
}

func TestLogEnvReadOnce(t *testing.T) {
	buf := logSetup(t, "warn", "")
	log := fi.Logger("tcp")
	log.Debug("before")
	t.Setenv("FI_LOG_LEVEL", "debug")
	log.Debug("after")
	require.Zero(t, buf.Len(), "FI_LOG_LEVEL is read once, at first use")
}
