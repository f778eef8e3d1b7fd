//go:build !unix

package remoting

import "io"

// initTryWrite: no in-place writes off unix; every frame goes through the
// write loop.
func (c *Conn) initTryWrite() {}

// reader: the connection itself off unix.
func (c *Conn) reader() io.Reader { return c.rw }
