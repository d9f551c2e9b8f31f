package fi

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// LevelTrace is the slog level of libfabric's FI_LOG_TRACE. libfabric ranks
// its levels warn < trace < info < debug by verbosity, so trace sits between
// slog.LevelInfo and slog.LevelWarn. The other libfabric levels are
// slog.LevelWarn (FI_LOG_WARN), slog.LevelInfo (FI_LOG_INFO) and
// slog.LevelDebug (FI_LOG_DEBUG).
const LevelTrace = slog.LevelInfo + 2

// logConf is the logging configuration read once from the environment.
var logConf struct {
	once     sync.Once
	levelSet bool       // FI_LOG_LEVEL names a known level
	level    slog.Level // the lowest level logged when levelSet
	provs    provFilter // FI_LOG_PROV
}

// loadLogConf reads FI_LOG_LEVEL and FI_LOG_PROV the first time it is
// called.
func loadLogConf() {
	logConf.once.Do(func() {
		logConf.level, logConf.levelSet = parseLogLevel(os.Getenv("FI_LOG_LEVEL"))
		logConf.provs = parseProvFilter(os.Getenv("FI_LOG_PROV"))
	})
}

// parseLogLevel maps libfabric's FI_LOG_LEVEL names, in any case, onto slog
// levels.
func parseLogLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "warn":
		return slog.LevelWarn, true
	case "trace":
		return LevelTrace, true
	case "info":
		return slog.LevelInfo, true
	case "debug":
		return slog.LevelDebug, true
	}
	return 0, false
}

// handlerBox holds the current destination of log records; a new box is
// stored on every change, so that a box pointer identifies a handler.
type handlerBox struct {
	h   slog.Handler
	def bool // the default stderr handler
}

// logDest is the current destination: nil means the default.
var logDest atomic.Pointer[handlerBox]

// defaultBox writes text records to stderr; level filtering is done by
// provHandler.
var defaultBox = &handlerBox{
	h:   slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}),
	def: true,
}

func currentBox() *handlerBox {
	if b := logDest.Load(); b != nil {
		return b
	}
	return defaultBox
}

// SetLogHandler sends the records of every logger from [Logger], including
// those made before the call, to h; nil restores the default handler, which
// writes text to stderr. It is gofabric's counterpart of fi_log(3)'s
// environment-only control, for applications that collect logs themselves.
//
// A handler set here sees every record its own Enabled accepts, except
// that FI_LOG_LEVEL, when set, still sets the lowest level passed on, and
// FI_LOG_PROV still selects providers.
func SetLogHandler(h slog.Handler) {
	if h == nil {
		logDest.Store(nil)
		return
	}
	logDest.Store(&handlerBox{h: h})
}

// Logger returns the logger a provider (or "core" for the framework) logs
// through, with the attribute prov=<prov> on every record, as libfabric's
// FI_WARN/FI_TRACE/FI_INFO/FI_DBG macros tag theirs (fi_log(3), fabric(7)
// "LOGGING INTERFACE"). The environment is read once, on first use:
//
//   - FI_LOG_LEVEL: warn, trace, info or debug, in any case (see
//     [LevelTrace] for the order). Unset or unknown, the default handler
//     logs nothing, which is what libfabric 1.17 does despite its "(default:
//     warn)" help text.
//   - FI_LOG_PROV: a comma-separated list of provider names to log; a list
//     starting with '^' names the providers not to log. Names match as in
//     [ProvNameMatches]. Unset, all providers log.
//
// Records go to stderr unless [SetLogHandler] names another handler.
func Logger(prov string) *slog.Logger {
	return slog.New(&provHandler{prov: prov}).With("prov", prov)
}

// provHandler filters records by the environment and passes them on to the
// current destination.
type provHandler struct {
	prov string
	ops  []handlerOp // WithAttrs and WithGroup calls, oldest first
	// derived caches the current destination with ops applied.
	derived atomic.Pointer[derivedHandler]
}

// handlerOp is one WithAttrs (attrs non-nil) or WithGroup call.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

type derivedHandler struct {
	box *handlerBox
	h   slog.Handler
}

// target returns the destination with h's attributes and groups applied.
func (h *provHandler) target(box *handlerBox) slog.Handler {
	if d := h.derived.Load(); d != nil && d.box == box {
		return d.h
	}
	t := box.h
	for _, op := range h.ops {
		if op.attrs != nil {
			t = t.WithAttrs(op.attrs)
		} else {
			t = t.WithGroup(op.group)
		}
	}
	h.derived.Store(&derivedHandler{box: box, h: t})
	return t
}

func (h *provHandler) Enabled(ctx context.Context, l slog.Level) bool {
	loadLogConf()
	if !logConf.provs.allows(h.prov) {
		return false
	}
	box := currentBox()
	switch {
	case logConf.levelSet && l < logConf.level:
		return false
	case !logConf.levelSet && box.def:
		return false
	}
	return h.target(box).Enabled(ctx, l)
}

func (h *provHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.target(currentBox()).Handle(ctx, r)
}

func (h *provHandler) with(op handlerOp) *provHandler {
	ops := make([]handlerOp, len(h.ops), len(h.ops)+1)
	copy(ops, h.ops)
	return &provHandler{prov: h.prov, ops: append(ops, op)}
}

func (h *provHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: attrs})
}

func (h *provHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}
