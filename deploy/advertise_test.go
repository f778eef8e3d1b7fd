package deploy

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil/cluster"
)

// TestBindAddressDistinctFromAdvertised is the rule every artefact here
// relies on: the broker listens on bindAddress and the name server hands
// clients brokerIP1, whatever the two are. Linux routes all of
// 127.0.0.0/8 to loopback, so three loopback addresses stand in for a
// pod's bind-all and its pod IP.
func TestBindAddressDistinctFromAdvertised(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs 127.0.0.2 and 127.0.0.3 without an alias (Linux)")
	}
	c := cluster.Start(t, nil, func(cfg *broker.Config) {
		cfg.BindAddress = "127.0.0.2"
		cfg.BrokerIP1 = "127.0.0.3"
		cfg.BrokerIP2 = "127.0.0.3"
		cfg.GRPCServerPort = -1
	})
	c.CreateTopic("DeployAdvertised", 1)
	port := c.Cfg.ListenPort
	route := c.NS.Routes().PickupTopicRouteData("DeployAdvertised")
	if route == nil || len(route.BrokerDatas) != 1 {
		t.Fatalf("route %+v", route)
	}
	if got, want := route.BrokerDatas[0].BrokerAddrs[0], fmt.Sprintf("127.0.0.3:%d", port); got != want {
		t.Errorf("advertised %s, want brokerIP1:listenPort %s", got, want)
	}
	dial := func(host string) error {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, fmt.Sprint(port)), 2*time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := dial("127.0.0.2"); err != nil {
		t.Errorf("bindAddress 127.0.0.2 does not accept: %v", err)
	}
	for _, host := range []string{"127.0.0.1", "127.0.0.3"} {
		if dial(host) == nil {
			t.Errorf("the broker also accepts on %s: it should listen on bindAddress only", host)
		}
	}
}
