package client

import (
	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/protocol"
)

// WithCredentials signs every request the client sends (to name servers
// and brokers) with an ACL 2.0 access key (the user name) and secret key
// (its password), as RocketMQ clients do: brokers with
// authenticationEnabled refuse unsigned requests with NO_PERMISSION. The
// trace producer signs with the same credentials. Default: unsigned.
func WithCredentials(accessKey, secretKey string) Opt {
	return Opt{func(c *clientConfig) {
		c.credentials = nil
		if accessKey != "" {
			c.credentials = &auth.Signer{AccessKey: accessKey, SecretKey: secretKey}
		}
	}}
}

// signer is the remoting client's Sign hook: nil without credentials.
func (c *clientConfig) signer() func(*protocol.Command) {
	if c.credentials == nil {
		return nil
	}
	return c.credentials.Sign
}
