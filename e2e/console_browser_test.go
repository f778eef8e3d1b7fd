package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/chromedp/chromedp"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/console"
	"github.com/apogeemq/apogee/internal/testutil"
)

// chromium finds Debian's chromium (CI installs it, see .ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt-get install -y chromium)")
	return ""
}

// browser starts one headless chromium for a test, as root needs it.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(testutil.Context(t, 2*time.Minute), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser() // closes the browser process chromedp started
		cancelAlloc()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// TestConsoleBrowser drives the console's pages in headless Chromium against
// a real broker and name server, with data made by the official Go client:
// the cluster page reached from the menu names the cluster, broker and
// address; a topic created through the form is listed by default; a message
// found by key shows its body; a consumer group's lag shows, and a reset by
// time moves its offsets; deep links load directly; an unknown topic gets a
// clear 404 page; the dashboard draws its live charts. Screenshots go to the
// test's temp dir.
func TestConsoleBrowser(t *testing.T) {
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
	shots := t.TempDir()
	if d := os.Getenv("CONSOLE_SCREENSHOTS"); d != "" { // keep them: CONSOLE_SCREENSHOTS=/some/dir
		shots = d
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
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
	adm, err := admin.New(admin.WithNameServers(c.nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })

	// Cluster: reached from the menu by a real link.
	run("open dashboard", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#brokers")))
	run("menu to cluster", chromedp.Click(chromedp.CSS(`nav a[href="/cluster"]`)), chromedp.WaitVisible(chromedp.CSS("#cluster-brokers")))
	cl := text("#cluster-brokers")
	for _, want := range []string{c.cfg.BrokerClusterName, c.cfg.BrokerName, c.b.Addr(), "MASTER"} {
		if !strings.Contains(cl, want) {
			t.Fatalf("cluster page lacks %q:\n%s", want, cl)
		}
	}
	shot("cluster")

	// Topics: create through the form; listed on the default page.
	topic := uniqueName(t, "CT")
	run("create topic", chromedp.Navigate(base+"/topics"),
		chromedp.SendKeys(chromedp.CSS(`#create-topic input[name="topic"]`), topic),
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name="readQueues"]`), "2"),
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name="writeQueues"]`), "2"),
		chromedp.Click(chromedp.CSS(`#create-topic button`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text("#topics"); !strings.Contains(got, topic) {
		t.Fatalf("new topic %s not on the topics page:\n%s", topic, got)
	}
	shot("topics")

	// Data from the official client: N messages with keys, consumed by a
	// group that then stops; M more make a lag of M.
	const n, m = 6, 4
	start := time.Now().Add(-2 * time.Second)
	p := newProducer(t, c.nsAddr)
	sendCtx := testutil.Context(t, 30*time.Second)
	for i := range n {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("console-%d", i)))
		msg.WithKeys([]string{fmt.Sprintf("ck-%d", i)})
		if _, err := p.SendSync(sendCtx, msg); err != nil {
			t.Fatal(err)
		}
	}
	group := uniqueName(t, "cg")
	consumeAllThenStop(t, c.nsAddr, adm, group, topic, n)
	for i := range m {
		if _, err := p.SendSync(sendCtx, primitive.NewMessage(topic, []byte(fmt.Sprintf("later-%d", i)))); err != nil {
			t.Fatal(err)
		}
	}

	// Messages by key show the body; the detail page previews it.
	run("search by key", chromedp.Navigate(base+"/messages?topic="+topic+"&key=ck-3"), chromedp.WaitVisible(chromedp.CSS("#messages")))
	if got := text("#messages"); !strings.Contains(got, "console-3") {
		t.Fatalf("message by key: %q", got)
	}
	shot("messages-by-key")
	run("open message", chromedp.Click(chromedp.CSS(`#messages a`)), chromedp.WaitVisible(chromedp.CSS("#body")))
	if got := text("#body"); got != "console-3" {
		t.Fatalf("body preview = %q", got)
	}
	shot("message")

	// Consumer group: its lag shows; a reset by time moves the offsets.
	testutil.Eventually(t, 10*time.Second, func() bool {
		pr, err := adm.ConsumerProgress(testutil.Context(t, 5*time.Second), group, topic)
		return err == nil && pr.TotalLag == m
	}, "lag of %s never %d", group, m)
	run("groups page", chromedp.Navigate(base+"/groups"), chromedp.WaitVisible(chromedp.CSS("#groups")))
	if got := text("#groups"); !strings.Contains(got, group) {
		t.Fatalf("group %s not listed:\n%s", group, got)
	}
	run("group page", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#groups a[href="/group?name=%s"]`, group))),
		chromedp.WaitVisible(chromedp.CSS("#total-lag")))
	if got := text("#total-lag"); got != fmt.Sprint(m) {
		t.Fatalf("total lag shown %q, want %d", got, m)
	}
	shot("group")
	run("reset offsets", chromedp.SetValue(chromedp.CSS(`#reset-form input[name="time"]`), start.Format("2006-01-02T15:04:05")),
		chromedp.Click(chromedp.CSS(`#reset-form button`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text("#total-lag"); got != fmt.Sprint(n+m) {
		t.Fatalf("lag after reset shown %q, want %d", got, n+m)
	}
	pr, err := adm.ConsumerProgress(testutil.Context(t, 5*time.Second), group, topic)
	if err != nil || pr.TotalLag != n+m {
		t.Fatalf("offsets after reset: %+v, %v", pr, err)
	}
	shot("group-after-reset")

	// Deep link straight to a topic; an unknown topic is a clear 404.
	run("deep link", chromedp.Navigate(base+"/topic?name="+topic), chromedp.WaitVisible(chromedp.CSS("#route")))
	if got := text("#status"); !strings.Contains(got, c.cfg.BrokerName) {
		t.Fatalf("topic status lacks the broker:\n%s", got)
	}
	shot("topic")
	run("unknown topic", chromedp.Navigate(base+"/topic?name=NoSuchTopicHere"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := text("#error"); !strings.Contains(got, "404") || !strings.Contains(got, "does not exist") {
		t.Fatalf("unknown topic page: %q", got)
	}

	// Broker runtime info; dashboard charts drawn by our script.
	run("broker page", chromedp.Navigate(base+"/broker?addr="+c.b.Addr()), chromedp.WaitVisible(chromedp.CSS("#runtime")))
	if got := text("#runtime"); !strings.Contains(got, "putTps") || !strings.Contains(got, "commitLogDiskRatio") {
		t.Fatalf("runtime info table: %q", got)
	}
	run("dashboard charts", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#chart-in polyline")))
	if got := text("#top-topics"); !strings.Contains(got, topic) {
		t.Fatalf("top topics lack %s: %q", topic, got)
	}
	shot("dashboard")
	t.Logf("screenshots in %s", shots)
}

// consumeAllThenStop consumes want messages of topic in group with an
// official push consumer, waits until its offsets are committed, and shuts
// it down (the group then has committed offsets and no live consumer).
func consumeAllThenStop(t *testing.T, nsAddr string, adm *admin.Admin, group, topic string, want int) {
	t.Helper()
	r := newReceived()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(uniqueName(t, "ci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, tagSelector("*"), func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		r.add(msgs...)
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			time.Sleep(officialStartGrace)
			disableGroupNotify(t, nsAddr, topic, group)
			pc.Shutdown()
		}
	}
	t.Cleanup(stop)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= int64(want) }, "consumed %d of %d", r.count.Load(), want)
	testutil.Eventually(t, 20*time.Second, func() bool {
		pr, err := adm.ConsumerProgress(testutil.Context(t, 5*time.Second), group, topic)
		return err == nil && pr.TotalLag == 0 && len(pr.Queues) > 0
	}, "offsets of %s never committed", group)
	stop()
}

// TestConsoleRefusesBadWrites: writes need POST with the CSRF token; bad
// names, oversize queries and unknown groups get a clear 4xx, and nothing
// is created.
func TestConsoleRefusesBadWrites(t *testing.T) {
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
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(path string, form url.Values) (int, string) {
		t.Helper()
		resp, err := hc.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, page := get("/topics")
	i := strings.Index(page, `name="csrf" value="`)
	if i < 0 {
		t.Fatal("no CSRF token on the topics page")
	}
	tok := page[i+len(`name="csrf" value="`):][:32]

	for _, tc := range []struct {
		name, method, path string
		form               url.Values
		want               int
		text               string
	}{
		{"create without token", "POST", "/topics/create", url.Values{"topic": {"NoToken"}}, 403, "CSRF"},
		{"create with a wrong token", "POST", "/topics/create", url.Values{"topic": {"BadToken"}, "csrf": {strings.Repeat("0", 32)}}, 403, "CSRF"},
		{"create by GET", "GET", "/topics/create?topic=ByGet", nil, 405, ""},
		{"bad topic name", "POST", "/topics/create", url.Values{"topic": {"bad/name"}, "csrf": {tok}}, 400, "illegal characters"},
		{"bad queue count", "POST", "/topics/create", url.Values{"topic": {"Fine"}, "readQueues": {"x"}, "csrf": {tok}}, 400, "readQueues"},
		{"unknown group", "GET", "/group?name=NoSuchGroup", nil, 404, "does not exist"},
		{"unknown broker", "GET", "/broker?addr=127.0.0.1:1", nil, 404, "not registered"},
		{"bad time", "GET", "/messages?topic=TBW102&begin=yesterday", nil, 400, "bad time"},
		{"oversize query", "GET", "/messages?topic=" + strings.Repeat("T", 9000), nil, 414, "too long"},
		{"controller page without controller mode", "GET", "/controller", nil, 200, "No broker runs in controller mode"},
		{"acl page without authentication", "GET", "/acl", nil, 200, "ACL users and policies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			var body string
			if tc.method == "POST" {
				code, body = post(tc.path, tc.form)
			} else {
				code, body = get(tc.path)
			}
			if code != tc.want || !strings.Contains(body, tc.text) {
				t.Fatalf("%s %s = %d, want %d with %q:\n%.400s", tc.method, tc.path, code, tc.want, tc.text, body)
			}
		})
	}
	for _, topic := range []string{"NoToken", "BadToken", "ByGet", "Fine"} {
		if c.b.Topics.Contains(topic) {
			t.Errorf("topic %s was created by a refused request", topic)
		}
	}
	if code, _ := post("/topics/create", url.Values{"topic": {"WithToken"}, "csrf": {tok}}); code != http.StatusSeeOther || !c.b.Topics.Contains("WithToken") {
		t.Fatalf("a proper POST = %d, topic created %v", code, c.b.Topics.Contains("WithToken"))
	}
}

// TestConsoleLogin: against a cluster with ACL 2.0 authentication on, the
// console's pages are refused (403 with a login link) until a user logs
// in; a wrong password is refused (401); after login the pages show the
// cluster; logout ends the session.
func TestConsoleLogin(t *testing.T) {
	c := startAuthCluster(t, nil)
	con, err := console.New(console.Config{Listen: "127.0.0.1:0", NameServers: []string{c.nsAddr}}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := con.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { con.Close() })
	base := "http://" + con.Addr()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values) (int, string) {
		t.Helper()
		var resp *http.Response
		var err error
		if method == "POST" {
			resp, err = hc.PostForm(base+path, form)
		} else {
			resp, err = hc.Get(base + path)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do("GET", "/cluster", nil)
	if code != http.StatusForbidden || !strings.Contains(body, `id="login-link"`) {
		t.Fatalf("unauthenticated /cluster = %d:\n%.500s", code, body)
	}
	_, page := do("GET", "/login", nil)
	i := strings.Index(page, `name="csrf" value="`)
	if i < 0 {
		t.Fatal("no CSRF token on the login page")
	}
	tok := page[i+len(`name="csrf" value="`):][:32]
	if code, body := do("POST", "/login", url.Values{"csrf": {tok}, "username": {superUser}, "password": {"wrong"}}); code != http.StatusUnauthorized {
		t.Fatalf("wrong password = %d:\n%.300s", code, body)
	}
	if code, _ := do("POST", "/login", url.Values{"csrf": {tok}, "username": {superUser}, "password": {superPass}}); code != http.StatusSeeOther {
		t.Fatalf("login = %d", code)
	}
	code, body = do("GET", "/cluster", nil)
	if code != http.StatusOK || !strings.Contains(body, c.b.Addr()) {
		t.Fatalf("/cluster after login = %d:\n%.500s", code, body)
	}
	c.createTopic("console-auth", 2)
	if code, body := do("POST", "/topic/send", url.Values{"csrf": {tok}, "name": {"console-auth"}, "body": {"signed"}}); code != http.StatusSeeOther {
		t.Fatalf("test message in a session = %d:\n%.500s", code, body)
	}
	code, body = do("GET", "/acl", nil)
	if code != http.StatusOK || !strings.Contains(body, "<td>"+superUser+"</td>") {
		t.Fatalf("/acl after login = %d:\n%.800s", code, body)
	}
	if code, _ := do("POST", "/logout", url.Values{"csrf": {tok}}); code != http.StatusSeeOther {
		t.Fatalf("logout = %d", code)
	}
	if code, _ := do("GET", "/cluster", nil); code != http.StatusForbidden {
		t.Fatalf("/cluster after logout = %d", code)
	}
}
