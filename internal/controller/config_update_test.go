package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// UPDATE_CONTROLLER_CONFIG (1009): run-time keys apply at once and are
// written back to the config file; black-listed keys (the fixed three and
// configBlackList's entries) and start-only keys are refused with
// NO_PERMISSION; bad values with INVALID_PARAMETER; a refused request
// changes nothing.
func TestUpdateControllerConfig(t *testing.T) {
	cfg := testConfigs(t, 1)[0]
	cfg.ConfigBlackList = "configBlackList;configStorePath;notifyBrokerRoleChanged"
	file := filepath.Join(t.TempDir(), "controller.conf")
	if err := os.WriteFile(file, []byte("# test\njRaftGroupId=g\nenableElectUncleanMaster=false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, testutil.DiscardLogger())
	if err != nil {
		t.Fatal(err)
	}
	c.SetConfigFile(file)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := remoting.NewClient(remoting.ClientConfig{})
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	call := func(code protocol.RequestCode, body string) *protocol.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := cl.InvokeSync(ctx, c.Addr(), protocol.NewRequest(code, nil, []byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	tests := []struct {
		name   string
		body   string
		code   protocol.ResponseCode
		remark string
	}{
		{"run-time key", "enableElectUncleanMaster=true\nscanNotActiveBrokerInterval=50", protocol.Success, ""},
		{"fixed black list", "configStorePath=/tmp/x", protocol.NoPermission, "Can not update config in black list."},
		{"rocketmqHome", "rocketmqHome=/tmp/x", protocol.NoPermission, "Can not update config in black list."},
		{"configured black list", "notifyBrokerRoleChanged=false", protocol.NoPermission, "Can not update config in black list."},
		{"start-only key", "jRaftServerId=127.0.0.1:1", protocol.NoPermission, "at run time"},
		{"all or nothing", "enableElectUncleanMaster=false\njRaftGroupId=other", protocol.NoPermission, "at run time"},
		{"bad value", "enableElectUncleanMaster=maybe", protocol.InvalidParameter, "enableElectUncleanMaster"},
		{"invalid config", "electMasterMaxRetryCount=0", protocol.InvalidParameter, "electMasterMaxRetryCount"},
		{"bad properties text", "a=\\u12", protocol.InvalidParameter, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := call(protocol.UpdateControllerConfig, tc.body)
			if protocol.ResponseCode(resp.Code) != tc.code || !strings.Contains(resp.Remark, tc.remark) {
				t.Fatalf("code %d %q, want %d containing %q", resp.Code, resp.Remark, tc.code, tc.remark)
			}
		})
	}
	// The accepted update is in effect, shown, and persisted; the refused
	// ones changed nothing.
	if !c.dyn.unclean.Load() || c.dyn.scanInterval() != 50*time.Millisecond || !c.dyn.notify.Load() || c.dyn.retries.Load() != 3 {
		t.Fatalf("effective: unclean=%v scan=%v notify=%v retries=%d", c.dyn.unclean.Load(), c.dyn.scanInterval(), c.dyn.notify.Load(), c.dyn.retries.Load())
	}
	shown := string(call(protocol.GetControllerConfig, "").Body)
	for _, want := range []string{"enableElectUncleanMaster=true\n", "scanNotActiveBrokerInterval=50\n", "jRaftGroupId=" + cfg.JRaftGroupID + "\n"} {
		if !strings.Contains(shown, want) {
			t.Fatalf("GET_CONTROLLER_CONFIG lacks %q:\n%s", want, shown)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "# test\njRaftGroupId=g\nenableElectUncleanMaster=true\nscanNotActiveBrokerInterval=50\n"; got != want {
		t.Fatalf("config file:\n%s\nwant:\n%s", got, want)
	}
}
