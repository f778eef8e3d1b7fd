package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
)

func init() { register(newProduceCmd) }

// newProduceCmd is `apogee produce`: send one message (--body), or one per
// line of stdin, and print each result.
func newProduceCmd(g *globalFlags) *cobra.Command {
	var namesrv, topic, body, tag, keys, group string
	var props []string
	var count int
	var asJSON bool
	var sec secureFlags // --ak, --sk, --tls (admin_auth.go)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Send messages: --body, or one per line of stdin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := g.logger(os.Stderr)
			if err != nil {
				return err
			}
			secure, err := sec.clientOptions()
			if err != nil {
				return err
			}
			opts := []client.ProducerOpt{client.WithNameServers(namesrv), client.WithLogger(logger)}
			for _, o := range secure {
				opts = append(opts, o)
			}
			p, err := client.NewProducer(group, opts...)
			if err != nil {
				return err
			}
			if err := p.Start(); err != nil {
				return err
			}
			defer p.Close()
			send := func(b string) error {
				m := client.NewMessage(topic, []byte(b)).WithTag(tag)
				if keys != "" {
					m.WithKeys(strings.Fields(keys)...)
				}
				for _, kv := range props {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						return fmt.Errorf("--prop %q: want key=value", kv)
					}
					m.SetProperty(k, v)
				}
				res, err := p.Send(cmd.Context(), m)
				if err != nil {
					return oneLine(err)
				}
				return sendResultRows(res).print(cmd.OutOrStdout(), asJSON)
			}
			if cmd.Flags().Changed("body") {
				for range count {
					if err := send(body); err != nil {
						return err
					}
				}
				return nil
			}
			return eachLine(cmd.InOrStdin(), send)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namesrv, "namesrv", "n", defaultNamesrv(), "name server address(es)")
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVarP(&body, "body", "b", "", "message body (default: one message per stdin line)")
	f.StringVar(&tag, "tag", "", "message tag")
	f.StringVar(&keys, "keys", "", "message keys, space separated")
	f.StringArrayVar(&props, "prop", nil, "user property key=value (repeatable)")
	f.StringVarP(&group, "group", "g", "APOGEE_PRODUCER", "producer group")
	f.IntVarP(&count, "count", "c", 1, "with --body: send it this many times")
	f.BoolVar(&asJSON, "json", false, "print results as JSON")
	sec.register(f)
	cmd.MarkFlagRequired("topic")
	return cmd
}

func eachLine(r io.Reader, fn func(string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if err := fn(sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}
