/*
 * selection_core._kernel: the optional compiled kernel of the selection rule.
 *
 * For the texts of one article, already through steps 1 to 7 of the rule
 * (docs/rule.md), it does step 8 (tokens) and step 2 (shingles) and returns
 * only sizes:
 *
 *     article_counts(texts, token_table, seed) -> (token_counts, regions)
 *
 * texts        a tuple of up to 8 folded texts (str) or None;
 * token_table  bytes, one byte per code point 0..0x10FFFF, non-zero when the
 *              code point matches [\p{L}\p{N}] (selection_core/kernel.py builds
 *              it from the `regex` module itself);
 * seed         an unsigned 64-bit integer mixed into the hash functions (any
 *              value gives the same result: only the speed on adversarial input
 *              depends on it);
 * token_counts a tuple of the token count of each text (0 for None);
 * regions      a tuple of 2**len(texts) integers: regions[m] is the number of
 *              distinct shingles that occur in exactly the texts whose bits are
 *              set in m (regions[0] is 0). Every set size the rule needs
 *              (shingle counts, the consensus, the overlaps) is a sum of regions.
 *
 * Exactness. Tokens are the maximal runs of code points marked in the table.
 * Every distinct token gets a small integer id through a hash table whose
 * matches are confirmed by comparing the tokens' code points in full; a shingle
 * is the tuple of its tokens' ids (a text of 1 to 4 tokens: its ids, padded
 * with NO_TOKEN, which no id equals), and shingle matches are confirmed by
 * comparing all five ids. Hash values only choose where to look: they never
 * decide equality, and nothing that depends on them (order, ids) leaves this
 * file. Equal texts (same object or same code points) are processed once.
 *
 * The work runs without the GIL, on memory from PyMem_Raw*, all freed before
 * returning; the only Python objects created are the result's integers.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define SHINGLE_SIZE 5
#define MAX_TEXTS 8
#define TABLE_LEN 0x110000
#define NO_TOKEN UINT32_MAX
#define MAX_IDS (UINT32_MAX - 1)

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} TextView;

/* A distinct token: where its first occurrence is. id == 0 marks a free slot. */
typedef struct {
    uint64_t hash;
    Py_ssize_t start;
    Py_ssize_t length;
    uint32_t text;
    uint32_t id; /* id + 1 */
} TokenSlot;

/* A distinct shingle and the texts it occurs in. mask == 0 marks a free slot. */
typedef struct {
    uint32_t ids[SHINGLE_SIZE];
    uint32_t mask;
} ShingleSlot;

typedef struct {
    const TextView *texts;
    const unsigned char *table;
    uint64_t seed;
    TokenSlot *tokens;
    size_t token_cap; /* a power of two */
    size_t token_used;
    ShingleSlot *shingles;
    size_t shingle_cap; /* a power of two */
    size_t shingle_used;
    uint32_t *ids; /* the token ids of the text being processed */
    size_t ids_cap;
    size_t ids_len;
    int overflow; /* more distinct tokens than ids: refuse, the caller falls back */
} Work;

static inline uint64_t
mix64(uint64_t x)
{
    /* The finalizer of SplitMix64: a bijection that spreads every input bit. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline Py_UCS4
read_cp(const TextView *t, Py_ssize_t i)
{
    return PyUnicode_READ(t->kind, t->data, i);
}

static int
same_code_points(const TextView *a, Py_ssize_t a_start, const TextView *b, Py_ssize_t b_start, Py_ssize_t length)
{
    if (a->kind == b->kind) {
        const char *pa = (const char *)a->data + (size_t)a_start * (size_t)a->kind;
        const char *pb = (const char *)b->data + (size_t)b_start * (size_t)b->kind;
        return memcmp(pa, pb, (size_t)length * (size_t)a->kind) == 0;
    }
    for (Py_ssize_t i = 0; i < length; i++) {
        if (read_cp(a, a_start + i) != read_cp(b, b_start + i)) {
            return 0;
        }
    }
    return 1;
}

/* Allocation helpers: 0 on success, -1 when out of memory (nothing changed). */

static int
grow_tokens(Work *w)
{
    size_t cap = w->token_cap ? w->token_cap * 2 : 1024;
    if (cap > SIZE_MAX / sizeof(TokenSlot)) {
        return -1;
    }
    TokenSlot *slots = PyMem_RawCalloc(cap, sizeof(TokenSlot));
    if (slots == NULL) {
        return -1;
    }
    size_t mask = cap - 1;
    for (size_t i = 0; i < w->token_cap; i++) {
        TokenSlot *old = &w->tokens[i];
        if (old->id == 0) {
            continue;
        }
        size_t j = (size_t)old->hash & mask;
        while (slots[j].id != 0) {
            j = (j + 1) & mask;
        }
        slots[j] = *old;
    }
    PyMem_RawFree(w->tokens);
    w->tokens = slots;
    w->token_cap = cap;
    return 0;
}

static inline uint64_t
shingle_hash(const uint32_t *ids, uint64_t seed)
{
    uint64_t h = seed;
    for (int i = 0; i < SHINGLE_SIZE; i++) {
        h = mix64(h ^ ids[i]);
    }
    return h;
}

static int
grow_shingles(Work *w)
{
    size_t cap = w->shingle_cap ? w->shingle_cap * 2 : 1024;
    if (cap > SIZE_MAX / sizeof(ShingleSlot)) {
        return -1;
    }
    ShingleSlot *slots = PyMem_RawCalloc(cap, sizeof(ShingleSlot));
    if (slots == NULL) {
        return -1;
    }
    size_t mask = cap - 1;
    for (size_t i = 0; i < w->shingle_cap; i++) {
        ShingleSlot *old = &w->shingles[i];
        if (old->mask == 0) {
            continue;
        }
        size_t j = (size_t)shingle_hash(old->ids, w->seed) & mask;
        while (slots[j].mask != 0) {
            j = (j + 1) & mask;
        }
        slots[j] = *old;
    }
    PyMem_RawFree(w->shingles);
    w->shingles = slots;
    w->shingle_cap = cap;
    return 0;
}

static int
push_id(Work *w, uint32_t id)
{
    if (w->ids_len == w->ids_cap) {
        size_t cap = w->ids_cap ? w->ids_cap * 2 : 4096;
        if (cap > SIZE_MAX / sizeof(uint32_t)) {
            return -1;
        }
        uint32_t *ids = PyMem_RawRealloc(w->ids, cap * sizeof(uint32_t));
        if (ids == NULL) {
            return -1;
        }
        w->ids = ids;
        w->ids_cap = cap;
    }
    w->ids[w->ids_len++] = id;
    return 0;
}

/* The id of the token text[start:start+length] (hash over its code points). */
static int
add_token(Work *w, uint32_t text, Py_ssize_t start, Py_ssize_t length, uint64_t hash)
{
    if (2 * (w->token_used + 1) > w->token_cap && grow_tokens(w) < 0) {
        return -1;
    }
    hash = mix64(hash);
    const TextView *t = &w->texts[text];
    size_t mask = w->token_cap - 1;
    size_t j = (size_t)hash & mask;
    for (;;) {
        TokenSlot *s = &w->tokens[j];
        if (s->id == 0) {
            if (w->token_used >= MAX_IDS) {
                w->overflow = 1;
                return -1;
            }
            s->hash = hash;
            s->start = start;
            s->length = length;
            s->text = text;
            s->id = (uint32_t)(++w->token_used);
            return push_id(w, s->id - 1);
        }
        if (s->hash == hash && s->length == length &&
            same_code_points(&w->texts[s->text], s->start, t, start, length)) {
            return push_id(w, s->id - 1);
        }
        j = (j + 1) & mask;
    }
}

static int
add_shingle(Work *w, const uint32_t *ids, uint32_t bit)
{
    if (2 * (w->shingle_used + 1) > w->shingle_cap && grow_shingles(w) < 0) {
        return -1;
    }
    size_t mask = w->shingle_cap - 1;
    size_t j = (size_t)shingle_hash(ids, w->seed) & mask;
    for (;;) {
        ShingleSlot *s = &w->shingles[j];
        if (s->mask == 0) {
            memcpy(s->ids, ids, sizeof(s->ids));
            s->mask = bit;
            w->shingle_used++;
            return 0;
        }
        if (memcmp(s->ids, ids, sizeof(s->ids)) == 0) {
            s->mask |= bit;
            return 0;
        }
        j = (j + 1) & mask;
    }
}

#define FNV_PRIME 0x100000001b3ULL

/* Tokens of one text: the maximal runs of code points marked in the table. */
#define TOKENIZE(CHAR)                                                        \
    do {                                                                      \
        const CHAR *s = (const CHAR *)t->data;                                \
        Py_ssize_t n = t->length, i = 0;                                      \
        while (i < n) {                                                       \
            while (i < n && !table[s[i]]) {                                   \
                i++;                                                          \
            }                                                                 \
            if (i == n) {                                                     \
                break;                                                        \
            }                                                                 \
            Py_ssize_t start = i;                                             \
            uint64_t h = w->seed;                                             \
            do {                                                              \
                h = (h ^ (uint64_t)s[i]) * FNV_PRIME;                         \
                i++;                                                          \
            } while (i < n && table[s[i]]);                                   \
            if (add_token(w, text, start, i - start, h ^ (uint64_t)(i - start)) < 0) { \
                return -1;                                                    \
            }                                                                 \
        }                                                                     \
    } while (0)

static int
tokenize(Work *w, uint32_t text)
{
    const TextView *t = &w->texts[text];
    const unsigned char *table = w->table;
    w->ids_len = 0;
    switch (t->kind) {
    case PyUnicode_1BYTE_KIND:
        TOKENIZE(Py_UCS1);
        break;
    case PyUnicode_2BYTE_KIND:
        TOKENIZE(Py_UCS2);
        break;
    default:
        TOKENIZE(Py_UCS4);
        break;
    }
    return 0;
}

/* The shingles of the text whose ids are in w->ids, recorded with `bit`. */
static int
add_shingles(Work *w, uint32_t bit)
{
    size_t n = w->ids_len;
    if (n == 0) {
        return 0;
    }
    if (n < SHINGLE_SIZE) {
        uint32_t key[SHINGLE_SIZE];
        for (size_t i = 0; i < SHINGLE_SIZE; i++) {
            key[i] = i < n ? w->ids[i] : NO_TOKEN;
        }
        return add_shingle(w, key, bit);
    }
    for (size_t i = 0; i + SHINGLE_SIZE <= n; i++) {
        if (add_shingle(w, &w->ids[i], bit) < 0) {
            return -1;
        }
    }
    return 0;
}

static void
free_work(Work *w)
{
    PyMem_RawFree(w->tokens);
    PyMem_RawFree(w->shingles);
    PyMem_RawFree(w->ids);
    w->tokens = NULL;
    w->shingles = NULL;
    w->ids = NULL;
}

static int
same_text(const TextView *a, const TextView *b)
{
    return a->length == b->length && a->kind == b->kind &&
           memcmp(a->data, b->data, (size_t)a->length * (size_t)a->kind) == 0;
}

static PyObject *
article_counts(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *texts_obj;
    Py_buffer table = {0};
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "O!y*K:article_counts", &PyTuple_Type, &texts_obj, &table, &seed)) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n_texts = PyTuple_GET_SIZE(texts_obj);
    if (table.len != TABLE_LEN) {
        PyErr_Format(PyExc_ValueError, "token_table must have %d bytes, not %zd", TABLE_LEN, table.len);
        goto done;
    }
    if (n_texts < 1 || n_texts > MAX_TEXTS) {
        PyErr_Format(PyExc_ValueError, "texts must hold 1 to %d items, not %zd", MAX_TEXTS, n_texts);
        goto done;
    }
    TextView views[MAX_TEXTS];
    int present[MAX_TEXTS];
    int same_as[MAX_TEXTS]; /* the first equal text (itself if none) */
    for (Py_ssize_t i = 0; i < n_texts; i++) {
        PyObject *item = PyTuple_GET_ITEM(texts_obj, i);
        present[i] = item != Py_None;
        same_as[i] = (int)i;
        views[i].kind = PyUnicode_1BYTE_KIND;
        views[i].data = "";
        views[i].length = 0;
        if (!present[i]) {
            continue;
        }
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "texts[%zd] must be str or None, not %.100s", i, Py_TYPE(item)->tp_name);
            goto done;
        }
        if (PyUnicode_READY(item) < 0) {
            goto done;
        }
        views[i].kind = PyUnicode_KIND(item);
        views[i].data = PyUnicode_DATA(item);
        views[i].length = PyUnicode_GET_LENGTH(item);
    }
    for (Py_ssize_t i = 0; i < n_texts; i++) {
        for (Py_ssize_t j = 0; j < i && present[i]; j++) {
            if (present[j] && same_as[j] == j && same_text(&views[i], &views[j])) {
                same_as[i] = (int)j;
                break;
            }
        }
    }

    Work w = {0};
    w.texts = views;
    w.table = (const unsigned char *)table.buf;
    w.seed = (uint64_t)seed;
    size_t token_counts[MAX_TEXTS] = {0};
    size_t regions[1 << MAX_TEXTS] = {0};
    int failed = 0;

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_texts && !failed; i++) {
        if (!present[i] || same_as[i] != i) {
            continue;
        }
        if (tokenize(&w, (uint32_t)i) < 0 || add_shingles(&w, 1u << i) < 0) {
            failed = 1;
            break;
        }
        token_counts[i] = w.ids_len;
    }
    if (!failed) {
        size_t base[1 << MAX_TEXTS] = {0};
        for (size_t j = 0; j < w.shingle_cap; j++) {
            base[w.shingles[j].mask]++;
        }
        /* A text equal to an earlier one has exactly that one's shingles. */
        for (uint32_t m = 1; m < (1u << n_texts); m++) {
            uint32_t full = m;
            for (Py_ssize_t i = 0; i < n_texts; i++) {
                if (same_as[i] != i && (m >> same_as[i]) & 1) {
                    full |= 1u << i;
                }
            }
            regions[full] += base[m];
        }
        for (Py_ssize_t i = 0; i < n_texts; i++) {
            if (same_as[i] != i) {
                token_counts[i] = token_counts[same_as[i]];
            }
        }
    }
    free_work(&w);
    Py_END_ALLOW_THREADS

    if (failed) {
        if (w.overflow) {
            PyErr_SetString(PyExc_OverflowError, "more distinct tokens in one article than the kernel can number");
        } else {
            PyErr_NoMemory();
        }
        goto done;
    }

    PyObject *counts = PyTuple_New(n_texts);
    PyObject *regs = PyTuple_New((Py_ssize_t)1 << n_texts);
    if (counts == NULL || regs == NULL) {
        Py_XDECREF(counts);
        Py_XDECREF(regs);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_texts; i++) {
        PyObject *v = PyLong_FromSize_t(token_counts[i]);
        if (v == NULL) {
            Py_DECREF(counts);
            Py_DECREF(regs);
            goto done;
        }
        PyTuple_SET_ITEM(counts, i, v);
    }
    for (Py_ssize_t m = 0; m < ((Py_ssize_t)1 << n_texts); m++) {
        PyObject *v = PyLong_FromSize_t(regions[m]);
        if (v == NULL) {
            Py_DECREF(counts);
            Py_DECREF(regs);
            goto done;
        }
        PyTuple_SET_ITEM(regs, m, v);
    }
    result = PyTuple_Pack(2, counts, regs);
    Py_DECREF(counts);
    Py_DECREF(regs);

done:
    PyBuffer_Release(&table);
    return result;
}

PyDoc_STRVAR(article_counts_doc,
"article_counts(texts, token_table, seed, /)\n"
"--\n"
"\n"
"Token counts of the folded texts (a tuple of str or None) and the sizes of\n"
"the regions of their shingle sets' Venn diagram: regions[m] is the number of\n"
"distinct shingles found in exactly the texts whose bits are set in m.");

static PyMethodDef kernel_methods[] = {
    {"article_counts", article_counts, METH_VARARGS, article_counts_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "selection_core._kernel",
    .m_doc = "The optional compiled kernel of the selection rule (tokens, shingles, set sizes).",
    .m_size = 0,
    .m_methods = kernel_methods,
};

PyMODINIT_FUNC
PyInit__kernel(void)
{
    PyObject *m = PyModuleDef_Init(&kernel_module);
    return m;
}
