package broker

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(configCrashChildEnv); dir != "" {
		configCrashChild(dir) // config_log_crash_test.go; never returns
	}
	goleak.VerifyTestMain(m)
}
