//go:build !unix

package remoting

// initTryWrite: no in-place writes off unix; every frame goes through the
// write loop.
func (c *Conn) initTryWrite() {}
