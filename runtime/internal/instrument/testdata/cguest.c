// A freestanding C module (no libc) for the differential tests: clang -O2
// turns these loops into SIMD and bulk-memory instructions.
typedef unsigned int u32;
typedef unsigned long long u64;

static unsigned char a[4096], b[4096];
static int arr[1000];

static u64 fnv(const unsigned char *p, u32 n) {
	u64 h = 14695981039346656037ull;
	for (u32 i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void sort(int *v, int lo, int hi) {
	while (lo < hi) {
		int p = v[(lo + hi) / 2], i = lo, j = hi;
		while (i <= j) {
			while (v[i] < p) i++;
			while (v[j] > p) j--;
			if (i <= j) { int t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }
		}
		if (j - lo < hi - i) { sort(v, lo, j); lo = i; } else { sort(v, i, hi); hi = j; }
	}
}

u64 run_memops(void) {
	for (u32 i = 0; i < sizeof a; i++) a[i] = (unsigned char)(i * 13);
	__builtin_memcpy(b, a, sizeof a);
	__builtin_memset(b + 100, 7, 1000);
	__builtin_memmove(b + 1, b, 2000);
	return fnv(b, sizeof b);
}

u64 run_sort(void) {
	u32 x = 12345;
	for (int i = 0; i < 1000; i++) { x = x * 1103515245u + 12345u; arr[i] = (int)(x >> 8); }
	sort(arr, 0, 999);
	return fnv((const unsigned char *)arr, sizeof arr);
}

u32 run_vec(void) {
	u32 s[256];
	for (u32 i = 0; i < 256; i++) s[i] = i * i;
	u32 t = 0;
	for (u32 i = 0; i < 256; i++) t += s[i] ^ (s[i] >> 3);
	return t;
}

static int ack(int m, int n) {
	if (m == 0) return n + 1;
	if (n == 0) return ack(m - 1, 1);
	return ack(m - 1, ack(m, n - 1));
}

int run_ack(void) { return ack(2, 300); }

int run_grow(void) {
	int before = __builtin_wasm_memory_size(0);
	int r = __builtin_wasm_memory_grow(0, 3);
	return before * 1000 + (r == before) * 100 + __builtin_wasm_memory_size(0);
}
