//go:build !linux

package fabtests

import (
	"runtime"
	"testing"
)

// inNetns would run the current group (t) inside a new network namespace;
// only Linux has them, so it skips t with the reason (fails it under
// GOFABRIC_STRICT).
func (s *suite) inNetns(t *testing.T) {
	t.Helper()
	if s.cfg.SingleProcess {
		t.Skip("Config.SingleProcess: the group runs in a network namespace, in a re-executed test binary")
	}
	netnsMissing(t, "network namespaces are Linux's (ip-netns(8)); this is %s/%s", runtime.GOOS, runtime.GOARCH)
}
