package auth

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

var crashRounds = flag.Int("crash.rounds", 3, "SIGKILL rounds in TestCrashDurability")

const crashChildEnv = "APOGEE_AUTH_CRASH_CHILD"

// TestCrashDurability SIGKILLs a child process that keeps changing the
// store (a user and an ACL entry per step, printing "ok N" after each
// change returned) at a random moment, then reopens: every acknowledged
// change is there, the file is whole, and the store still accepts changes.
func TestCrashDurability(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	acked := -1
	for round := range *crashRounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDurability$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		target := acked + 5 + round*3
		for sc.Scan() {
			n, ok := strings.CutPrefix(sc.Text(), "ok ")
			if !ok {
				continue
			}
			if acked, err = strconv.Atoi(n); err != nil {
				t.Fatal(err)
			}
			if acked >= target {
				break
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		s, err := Open(dir)
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		for i := 0; i <= acked; i++ {
			if _, ok := s.User(fmt.Sprintf("u%d", i)); !ok {
				t.Fatalf("round %d: acknowledged user u%d lost (acked %d)", round, i, acked)
			}
		}
		a, ok, err := s.GetACL("User:u0")
		if acked >= 0 && (!ok || err != nil || len(a.Policies[0].Entries) < acked+1) {
			t.Fatalf("round %d: acl entries lost: %+v ok=%v err=%v", round, a, ok, err)
		}
		if _, err := os.Stat(filepath.Join(dir, FileName+".tmp")); err == nil {
			t.Fatalf("round %d: temp file left after open", round)
		}
	}
}

// crashChild changes the store forever, acknowledging each change.
func crashChild(dir string) {
	for i := 0; ; i++ {
		s, err := Open(dir)
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		// Step j is "create u<j>, then add entry t<j>": a kill between the
		// two leaves u<j> without its entry, so the next run resumes at the
		// first step whose entry is missing and skips a user already made.
		start := 0
		if a, ok, err := s.GetACL("User:u0"); err == nil && ok && len(a.Policies) > 0 {
			start = len(a.Policies[0].Entries)
		}
		for j := start; j < start+1000; j++ {
			name := fmt.Sprintf("u%d", j)
			if _, made := s.User(name); !made {
				if err := s.CreateUser(User{Username: name, Password: "p"}); err != nil {
					fmt.Println("create:", err)
					os.Exit(1)
				}
			}
			res, _ := ParseResource(fmt.Sprintf("Topic:t%d", j))
			if err := s.PutACL(ACL{Subject: "User:u0", Policies: []Policy{{Entries: []Entry{{Resource: res, Actions: actPub, Decision: Allow}}}}}); err != nil {
				fmt.Println("acl:", err)
				os.Exit(1)
			}
			fmt.Printf("ok %d\n", j)
		}
	}
}
