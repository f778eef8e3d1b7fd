package namesrv

import (
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/config"
)

func TestConfigDefaultsAndKeys(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	m := config.ToMap(&c)
	for key, want := range map[string]string{
		"listenPort": "9876", "scanNotActiveBrokerInterval": "5000", "brokerChannelExpiredTime": "120000",
		"orderMessageEnable": "false", "clientRequestThreadPoolNums": "8", "defaultThreadPoolNums": "16",
		"deleteTopicWithBrokerRegistration": "false", "enableAllTopicList": "true",
	} {
		if m[key] != want {
			t.Errorf("%s = %q, want %q", key, m[key], want)
		}
	}
	if !strings.HasSuffix(c.KVConfigPath, "namesrv/kvConfig.json") {
		t.Errorf("kvConfigPath = %q", c.KVConfigPath)
	}
}

func TestConfigFromFile(t *testing.T) {
	p, err := config.Parse(strings.NewReader("listenPort=9877\nscanNotActiveBrokerInterval=200\norderMessageEnable=true\nbogus=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	unknown, err := config.Apply(p, &c)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "bogus" {
		t.Errorf("unknown = %v", unknown)
	}
	if c.ListenPort != 9877 || c.ScanNotActiveBrokerInterval != 200*time.Millisecond || !c.OrderMessageEnable {
		t.Errorf("applied %+v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantKey string
	}{
		{"port", func(c *Config) { c.ListenPort = 70000 }, "listenPort"},
		{"scan interval", func(c *Config) { c.ScanNotActiveBrokerInterval = 0 }, "scanNotActiveBrokerInterval"},
		{"expiry", func(c *Config) { c.BrokerChannelExpiredTime = -1 }, "brokerChannelExpiredTime"},
		{"pool", func(c *Config) { c.DefaultThreadPoolNums = 0 }, "defaultThreadPoolNums"},
		{"bind", func(c *Config) { c.BindAddress = "not an ip" }, "bindAddress"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.wantKey) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.wantKey)
			}
		})
	}
}
