package e2e

// Name-server acceptance tests: a broker registration made with Apogee's
// own remoting client is resolved by the official Go client; brokers leave
// routes when their heartbeats stop and when their connection closes; bad
// bytes on the port cost only their own connection.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/cluster"
)

// startNamesrv runs a name server in-process on 127.0.0.1:0
// (internal/testutil/cluster).
func startNamesrv(t testing.TB, mutate func(*namesrv.Config)) *namesrv.Server {
	t.Helper()
	rlog.SetLogLevel("error")
	return cluster.StartNamesrv(t, testLogger(t), mutate)
}

// fakeBroker registers with a name server the way a broker does: over its
// own remoting connection, REGISTER_BROKER with a RegisterBrokerBody.
type fakeBroker struct {
	t       *testing.T
	client  *remoting.Client
	nsAddr  string
	header  protocol.RegisterBrokerRequestHeader
	topics  map[string]protocol.TopicConfig
	version protocol.DataVersion
}

func newFakeBroker(t *testing.T, nsAddr, cluster, name, addr string, id int64) *fakeBroker {
	t.Helper()
	c := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := &fakeBroker{t: t, client: c, nsAddr: nsAddr,
		header: protocol.RegisterBrokerRequestHeader{BrokerName: name, BrokerAddr: addr, ClusterName: cluster,
			HaServerAddr: addr, BrokerID: id},
		topics:  map[string]protocol.TopicConfig{},
		version: protocol.DataVersion{Timestamp: time.Now().UnixMilli()},
	}
	// Every broker carries its system topics; the auto-create template too.
	b.addTopic("TBW102", 8, 7)
	b.addTopic("SELF_TEST_TOPIC", 1, 6)
	return b
}

func (b *fakeBroker) addTopic(name string, queues, perm int32) {
	tc := protocol.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queues, queues, perm
	b.topics[name] = tc
	b.version = b.version.Next(time.Now().UnixMilli())
}

func (b *fakeBroker) register() {
	b.t.Helper()
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: b.topics, DataVersion: b.version,
	}}
	raw, err := body.Encode()
	if err != nil {
		b.t.Fatal(err)
	}
	h := b.header
	h.BodyCrc32 = int32(crc32.ChecksumIEEE(raw) & 0x7FFFFFFF)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := b.client.InvokeSync(ctx, b.nsAddr, protocol.NewRequest(protocol.RegisterBroker, protocol.EncodeHeader(&h, false), raw))
	if err != nil {
		b.t.Fatalf("register broker: %v", err)
	}
	if resp.Code != int32(protocol.Success) {
		b.t.Fatalf("register broker: code %d %q", resp.Code, resp.Remark)
	}
}

// goAdmin returns a fresh official Go admin client (fresh, so it has no
// cached routes).
func goAdmin(t *testing.T, nsAddr string) admin.Admin {
	t.Helper()
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{nsAddr})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// publishQueues asks the official Go client for a topic's publish queues:
// it sends GET_ROUTEINFO_BY_TOPIC and parses the route with its own parser.
func publishQueues(t *testing.T, nsAddr, topic string) ([]*primitive.MessageQueue, error) {
	t.Helper()
	return goAdmin(t, nsAddr).FetchPublishMessageQueues(context.Background(), topic)
}

// Acceptance 1: a registration sent by Apogee's remoting client becomes a
// route the official Go client resolves, with the right queues and broker.
func TestNamesrvGoClientResolvesRegisteredRoute(t *testing.T) {
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()
	a := newFakeBroker(t, nsAddr, "DefaultCluster", "broker-a", "127.0.0.1:10911", 0)
	a.addTopic("TopicTest", 4, 6)
	a.register()
	slave := newFakeBroker(t, nsAddr, "DefaultCluster", "broker-a", "127.0.0.1:10921", 1)
	slave.topics = a.topics
	slave.register()
	b := newFakeBroker(t, nsAddr, "DefaultCluster", "broker-b", "127.0.0.1:10912", 0)
	b.addTopic("TopicTest", 2, 6)
	b.addTopic("ReadOnly", 3, 4)
	b.register()

	mqs, err := publishQueues(t, nsAddr, "TopicTest")
	if err != nil {
		t.Fatalf("FetchPublishMessageQueues: %v", err)
	}
	var got []string
	for _, q := range mqs {
		if q.Topic != "TopicTest" {
			t.Errorf("queue of topic %q", q.Topic)
		}
		got = append(got, q.BrokerName+":"+string(rune('0'+q.QueueId)))
	}
	want := []string{"broker-a:0", "broker-a:1", "broker-a:2", "broker-a:3", "broker-b:0", "broker-b:1"}
	if !slices.Equal(got, want) {
		t.Fatalf("publish queues %v, want %v", got, want)
	}

	// The broker address the Go client will send to, parsed by its own
	// brokerAddrs splitter from our route body.
	goa := goAdmin(t, nsAddr)
	clusters, err := goa.FetchClusterList("TopicTest")
	if err != nil || !slices.Equal(clusters, []string{"DefaultCluster"}) {
		t.Fatalf("FetchClusterList = %v, %v", clusters, err)
	}
	list, err := goa.FetchAllTopicList(context.Background())
	if err != nil {
		t.Fatalf("FetchAllTopicList: %v", err)
	}
	sort.Strings(list.TopicList)
	if !slices.Equal(list.TopicList, []string{"ReadOnly", "SELF_TEST_TOPIC", "TBW102", "TopicTest"}) {
		t.Fatalf("topic list %v", list.TopicList)
	}

	// A read-only topic has no publish queues; an unknown topic is
	// "topic not exist" to the Go client.
	if mqs, err := publishQueues(t, nsAddr, "ReadOnly"); err != nil || len(mqs) != 0 {
		t.Fatalf("read-only topic publish queues %v, %v", mqs, err)
	}
	if _, err := publishQueues(t, nsAddr, "NoSuchTopic"); err == nil {
		t.Fatal("unknown topic resolved")
	}
}

// The Go admin's DeleteTopic finds the broker address in our route with its
// own brokerAddrs parser, sends DELETE_TOPIC_IN_BROKER there, then
// DELETE_TOPIC_IN_NAMESRV to the name server: the broker address round-trips
// through the official client, and the topic leaves the route.
func TestNamesrvGoAdminDeleteTopic(t *testing.T) {
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()

	deleted := make(chan string, 1)
	brokerSrv := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0", Logger: testutil.Logger(t)})
	brokerSrv.RegisterProcessor(protocol.DeleteTopicInBroker, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		select {
		case deleted <- req.Ext("topic"):
		default:
		}
		return protocol.NewResponse(req, protocol.Success, ""), nil
	}, remoting.PoolConfig{Workers: 1, QueueSize: 8})
	if err := brokerSrv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { brokerSrv.Close() })

	b := newFakeBroker(t, nsAddr, "C", "broker-real", brokerSrv.Addr().String(), 0)
	b.addTopic("DelTopic", 4, 6)
	b.register()

	if err := goAdmin(t, nsAddr).DeleteTopic(context.Background(), admin.WithTopicDelete("DelTopic")); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	select {
	case topic := <-deleted:
		if topic != "DelTopic" {
			t.Fatalf("broker asked to delete %q", topic)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Go admin never reached the broker address from our route")
	}
	if _, err := publishQueues(t, nsAddr, "DelTopic"); err == nil {
		t.Fatal("route of a deleted topic still served")
	}
}

// Acceptance 2: a broker leaves routes when its registrations stop (short
// scan and expiry here) and at once when its connection closes.
func TestNamesrvBrokerLeavesRoutes(t *testing.T) {
	t.Run("heartbeats stop", func(t *testing.T) {
		const expiry = 600 * time.Millisecond
		ns := startNamesrv(t, func(c *namesrv.Config) {
			c.ScanNotActiveBrokerInterval = 50 * time.Millisecond
			c.BrokerChannelExpiredTime = expiry
		})
		nsAddr := ns.Addr().String()
		b := newFakeBroker(t, nsAddr, "C", "broker-expire", "127.0.0.1:20911", 0)
		b.addTopic("ExpireTopic", 4, 6)
		b.register()
		if mqs, err := publishQueues(t, nsAddr, "ExpireTopic"); err != nil || len(mqs) != 4 {
			t.Fatalf("before expiry: %v, %v", mqs, err)
		}
		// Keep registering every 100 ms for twice the expiry: the route stays.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var lastRegistration time.Time
		for i := 0; i < 12; i++ {
			<-tick.C
			lastRegistration = time.Now()
			b.register()
			if _, err := publishQueues(t, nsAddr, "ExpireTopic"); err != nil {
				t.Fatalf("route lost while the broker was registering: %v", err)
			}
		}
		testutil.Eventually(t, 5*time.Second, func() bool {
			_, err := publishQueues(t, nsAddr, "ExpireTopic")
			return err != nil
		}, "route of a silent broker still served")
		if d := time.Since(lastRegistration); d < expiry {
			t.Fatalf("route dropped %v after the last registration, before the %v expiry", d, expiry)
		}
	})

	t.Run("connection closes", func(t *testing.T) {
		// Expiry is far away: only the connection close can remove it.
		ns := startNamesrv(t, nil)
		nsAddr := ns.Addr().String()
		b := newFakeBroker(t, nsAddr, "C", "broker-close", "127.0.0.1:20912", 0)
		b.addTopic("CloseTopic", 2, 6)
		b.register()
		if mqs, err := publishQueues(t, nsAddr, "CloseTopic"); err != nil || len(mqs) != 2 {
			t.Fatalf("before close: %v, %v", mqs, err)
		}
		b.client.CloseConn(nsAddr)
		testutil.Eventually(t, 5*time.Second, func() bool {
			_, err := publishQueues(t, nsAddr, "CloseTopic")
			return err != nil
		}, "route still served after the broker's connection closed")
	})
}

// Acceptance 3: garbage, an oversize frame claim, a truncated frame and an
// unknown code each cost only their connection (or get an answer), and a
// well-formed request on a new connection right after is answered.
func TestNamesrvSurvivesBadFrames(t *testing.T) {
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()
	b := newFakeBroker(t, nsAddr, "C", "broker-a", "127.0.0.1:10911", 0)
	b.addTopic("Good", 4, 6)
	b.register()

	frame := func(cmd *protocol.Command) []byte {
		out, err := protocol.AppendFrame(nil, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	routeReq := func(opaque int32) []byte {
		req := protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": "Good"}, nil)
		req.Opaque = opaque
		return frame(req)
	}
	huge := make([]byte, 8)
	binary.BigEndian.PutUint32(huge, 2<<30-1) // claims ~2 GiB
	binary.BigEndian.PutUint32(huge[4:], 20)
	badHeader := make([]byte, 8)
	binary.BigEndian.PutUint32(badHeader, 8)
	binary.BigEndian.PutUint32(badHeader[4:], 1000) // header longer than the frame
	full := routeReq(1)
	unknown := protocol.NewRequest(protocol.RequestCode(31999), nil, nil)
	unknown.Opaque = 9

	tests := []struct {
		name      string
		send      []byte
		halfClose bool // close our write side after sending
		wantCode  int32
		wantOK    bool // expect a response with wantCode; otherwise expect the connection closed
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false, 0, false},
		{"random bytes", []byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05}, false, 0, false},
		{"frame claiming 2 GiB", huge, false, 0, false},
		{"header longer than frame", append(badHeader, 1, 2, 3, 4), false, 0, false},
		{"truncated frame", full[:len(full)/2], true, 0, false},
		{"unknown request code", frame(unknown), false, int32(protocol.RequestCodeNotSupported), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", nsAddr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.halfClose {
				conn.(*net.TCPConn).CloseWrite()
			}
			resp, err := readFrame(conn)
			if tc.wantOK {
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				if resp.Code != tc.wantCode || !resp.IsResponse() || resp.Opaque != 9 {
					t.Fatalf("answer code %d flag %d opaque %d remark %q", resp.Code, resp.Flag, resp.Opaque, resp.Remark)
				}
			} else {
				var ne net.Error
				if err == nil {
					t.Fatalf("got a response %+v, want the connection closed", resp)
				}
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("connection neither answered nor closed: %v", err)
				}
			}

			// A well-formed request on a new connection right after.
			good, err := net.DialTimeout("tcp", nsAddr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer good.Close()
			good.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := good.Write(routeReq(7)); err != nil {
				t.Fatal(err)
			}
			r, err := readFrame(good)
			if err != nil {
				t.Fatalf("well-formed request after %s: %v", tc.name, err)
			}
			route, err := protocol.DecodeTopicRouteData(r.Body)
			if r.Code != 0 || r.Opaque != 7 || err != nil || route.QueueDatas[0].WriteQueueNums != 4 {
				t.Fatalf("route answer code %d opaque %d body %s (%v)", r.Code, r.Opaque, r.Body, err)
			}
		})
	}
	if _, err := publishQueues(t, nsAddr, "Good"); err != nil {
		t.Fatalf("the Go client after the bad frames: %v", err)
	}
}

// readFrame reads one response frame.
func readFrame(r io.Reader) (*protocol.Command, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > protocol.DefaultMaxFrameSize {
		return nil, errors.New("frame too large")
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return protocol.DecodeFrame(buf)
}

// The binary: `apogee namesrv` starts, serves the Go client, and exits 0 on
// SIGTERM.
func TestNamesrvBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	rlog.SetLogLevel("error")
	dir := t.TempDir()
	bin := buildApogee(t)
	conf := filepath.Join(dir, "namesrv.conf")
	if err := os.WriteFile(conf, []byte("listenPort=9\nscanNotActiveBrokerInterval=100\nsomeUnknownKey=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t, 60*time.Second)
	cmd := exec.CommandContext(ctx, bin, "namesrv", "-c", conf, "--listen", "127.0.0.1:0",
		"--kv-config-path", filepath.Join(dir, "kv.json"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	addr := ""
	if lines.Scan() {
		addr = strings.TrimPrefix(lines.Text(), "namesrv listening on ")
	}
	if addr == "" || strings.Contains(addr, " ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no listening line; stderr:\n%s", stderr.String())
	}
	b := newFakeBroker(t, addr, "C", "broker-a", "127.0.0.1:10911", 0)
	b.addTopic("BinTopic", 3, 6)
	b.register()
	if mqs, err := publishQueues(t, addr, "BinTopic"); err != nil || len(mqs) != 3 {
		t.Errorf("publish queues from the binary: %v, %v", mqs, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "someUnknownKey") {
		t.Errorf("unknown key not warned by name; stderr:\n%s", stderr.String())
	}
}
