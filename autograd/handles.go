package autograd

// Tape returns the tape v belongs to (nil for the zero Var), so that code handed only a value
// (a layer's Forward, a loss helper) can record ops on the same tape. A Var of a session's tape
// returns the session's Tape: its Session method gives the session.
func (v Var) Tape() *Tape { return v.t }

// Session returns the session that owns t (created by NewSession), or nil for a tape made with
// NewTape. The session's random ops (Dropout, Uniform...) draw keys from it.
func (t *Tape) Session() *Session {
	if t == nil {
		return nil
	}
	return t.sess
}

// Fail records err (non-nil) as the tape's error (its session's, for a session's tape) unless
// one is recorded already, so that later ops are no-ops, and returns the first error. Code built
// on the tape (a module's Forward, a custom loss) reports its own errors this way, as the
// built-in ops do.
func (t *Tape) Fail(err error) error {
	if err != nil {
		if t.sess != nil {
			return t.sess.fail(err)
		}
		t.fail(err)
	}
	if t.sess != nil {
		return t.sess.Err()
	}
	return t.err
}

// Session returns the session p was created in.
func (p *Param) Session() *Session { return p.s }
