package pgstore

// Settle waits for the background rollbacks of claims that acquired
// nothing, so that a test sees every connection back in the pool.
func (s *Store) Settle() { s.ending.Wait() }
