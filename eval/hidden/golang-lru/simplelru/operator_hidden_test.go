package simplelru

// The operator's tests (make eval's strongest set-up): inputs the project's own tests do not use.

import "testing"

func TestOperatorHiddenGetOldest(t *testing.T) {
	l, err := NewLRU(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		l.Add(i, i)
	}
	if k, _, ok := l.GetOldest(); !ok || k.(int) != 1 {
		t.Fatalf("oldest: %v %v", k, ok)
	}
}

func TestOperatorHiddenResize(t *testing.T) {
	l, err := NewLRU(5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		l.Add(i, i)
	}
	if evicted := l.Resize(2); evicted != 3 {
		t.Fatalf("evicted %d, not 3", evicted)
	}
	if l.Len() != 2 {
		t.Fatalf("len %d, not 2", l.Len())
	}
}
