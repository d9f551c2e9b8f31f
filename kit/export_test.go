package kit

// SetTestHookBeforeArm installs f to run in TryWait between its first look
// at the queue and the arming of the wait descriptor; nil removes it.
func SetTestHookBeforeArm(f func()) { testHookBeforeArm = f }
