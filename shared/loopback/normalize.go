package loopback

import "errors"

// Normalize reads an address on loopback and returns it as 127.0.0.1:PORT ("localhost"
// means 127.0.0.1, never resolved); allowZero accepts port 0 (bind a free one). Its
// error is the problem alone, for a caller that already shows the address.
func Normalize(s string, allowZero bool) (string, error) {
	var (
		port int
		err  error
	)
	if allowZero {
		port, err = ParseListenAddr(s)
	} else {
		_, port, err = ParseAddr(s)
	}
	if err != nil {
		var ae *AddrError
		if errors.As(err, &ae) {
			return "", errors.New(ae.Problem)
		}
		return "", err
	}
	return Addr(port), nil
}
