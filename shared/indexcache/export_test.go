package indexcache

// BreakForTest makes c drop every removal it computes: the deliberately broken variant
// the differential test must catch.
func BreakForTest(c *Cache) { c.dropRemovals = true }
