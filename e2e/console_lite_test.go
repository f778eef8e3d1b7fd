package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/chromedp/chromedp"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/console"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestConsoleLite drives the console's lite pages in headless Chromium
// against a real broker with lite topics made by the official v2 remoting
// producer (the __LITE_TOPIC property): the menu's Lite page lists the
// LITE parent with its lite topic count; the parent's page counts and
// names its lite topics; a lite topic's page shows its queue offsets and
// message count; an unknown parent is a 404 page.
func TestConsoleLite(t *testing.T) {
	ctx := browser(t)
	c := startCluster(t, nil)
	con, err := console.New(console.Config{Listen: "127.0.0.1:0", NameServers: []string{c.nsAddr}}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := con.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { con.Close() })
	base := "http://" + con.Addr()
	adm, err := admin.New(admin.WithNameServers(c.nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })

	parent := uniqueName(t, "LP")
	tc := admin.TopicConfig{Topic: parent, ReadQueues: 1, WriteQueues: 1}
	tc.Attributes = "+message.type=LITE,+lite.topic.expiration=60"
	if err := adm.CreateTopic(testutil.Context(t, 10*time.Second), tc, admin.Target{Cluster: c.cfg.BrokerClusterName}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, err := adm.TopicRoute(testutil.Context(t, 5*time.Second), parent)
		return err == nil
	}, "topic %s routed", parent)
	p := newProducer(t, c.nsAddr)
	sendCtx := testutil.Context(t, 30*time.Second)
	for i, lt := range []string{"chat-1", "chat-1", "chat-1", "chat-2"} {
		msg := primitive.NewMessage(parent, []byte(fmt.Sprintf("m%d", i)))
		msg.WithProperty(message.PropertyLiteTopic, lt)
		if _, err := p.SendSync(sendCtx, msg); err != nil {
			t.Fatalf("send to %s: %v", lt, err)
		}
	}

	text := func(sel string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Fatalf("wait for %s: %v", sel, err)
		}
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	run("menu to lite", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#brokers")),
		chromedp.Click(chromedp.CSS(`nav a[href="/lite"]`)), chromedp.WaitVisible(chromedp.CSS("#lite-parents")))
	if got := text("#lite-parents"); !strings.Contains(got, parent) || !strings.Contains(got, "2") {
		t.Fatalf("lite page lacks %s with 2 lite topics:\n%s", parent, got)
	}
	if got := text("#lite-brokers"); !strings.Contains(got, c.cfg.BrokerName) || !strings.Contains(got, "20000") {
		t.Fatalf("lite brokers table lacks the broker and its quota:\n%s", got)
	}
	run("open parent", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#lite-parents a[href="/lite/parent?topic=%s"]`, parent))),
		chromedp.WaitVisible(chromedp.CSS("#lite-total")))
	if got := text("#lite-total"); got != "2" {
		t.Fatalf("parent page counts %q lite topics, want 2", got)
	}
	if got := text(".lite-topics"); !strings.Contains(got, "chat-1") || !strings.Contains(got, "chat-2") {
		t.Fatalf("parent page lacks the lite topics:\n%s", got)
	}
	run("open lite topic", chromedp.Click(chromedp.CSS(`.lite-topics a[href$="lite=chat-1"]`)),
		chromedp.WaitVisible(chromedp.CSS("#lite-topic-status")))
	if got := text("#lite-topic-name"); got != "chat-1" {
		t.Fatalf("lite topic page names %q", got)
	}
	if got := text("#lite-topic-status"); !strings.Contains(got, c.cfg.BrokerName) {
		t.Fatalf("lite topic status lacks the broker:\n%s", got)
	}
	if got := text(".lite-messages"); got != "3" {
		t.Fatalf("lite topic page shows %q messages, want 3", got)
	}
	run("unknown parent", chromedp.Navigate(base+"/lite/parent?topic=NoSuchParent"), chromedp.WaitVisible(chromedp.CSS("body")))
	if got := text("body"); !strings.Contains(got, "not a LITE parent") {
		t.Fatalf("unknown parent page: %q", got)
	}
}
