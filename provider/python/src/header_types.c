/*
 * header_types.c: the types held while armed, an open addressing set of
 * type pointers, and an object's type read from its header (see
 * header_types.h). Used under the GIL.
 */
#include "frames.h" /* CPython's headers first */

#if !VT_TYPED_BY_TRACER
#include "internal/pycore_object.h" /* _PyType_PreHeaderSize */

#include <stdint.h>
#include <stdlib.h>

#include "header_types.h"
#include "intern.h"

/* a new object's count is small; a word above this is a pointer (a free
 * list's link, a collector's link), not a count */
#define FRESH_REFS_MAX ((Py_ssize_t)1 << 20)

static PyTypeObject **held_types;
static size_t cap, n;

static size_t slot_of(const void *t, size_t c)
{
	return (size_t)(vt_mix64((uint64_t)(uintptr_t)t) & (c - 1));
}

static int known(const PyTypeObject *t)
{
	if (!cap || !t)
		return 0;
	for (size_t j = slot_of(t, cap); held_types[j]; j = (j + 1) & (cap - 1))
		if (held_types[j] == t)
			return 1;
	return 0;
}

static int grow(void)
{
	size_t c = cap ? cap * 2 : 4096;
	PyTypeObject **t = calloc(c, sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < cap; i++) {
		size_t j;

		if (!held_types[i])
			continue;
		for (j = slot_of(held_types[i], c); t[j]; j = (j + 1) & (c - 1))
			;
		t[j] = held_types[i];
	}
	free(held_types);
	held_types = t;
	cap = c;
	return 0;
}

/* t held (a reference taken) unless it is already: 1 when taken now, 0
 * when held already or there is no memory for it */
static int hold(PyTypeObject *t)
{
	size_t j;

	if (known(t))
		return 0;
	if (2 * (n + 1) > cap && grow())
		return 0;
	for (j = slot_of(t, cap); held_types[j]; j = (j + 1) & (cap - 1))
		;
	Py_INCREF(t);
	held_types[j] = t;
	n++;
	return 1;
}

PyTypeObject *header_type(const void *block, size_t size, int dying, const void *likely)
{
	for (size_t off = 0; off <= VT_PRE_HEADER_MAX && off + sizeof(PyObject) <= size; off += 2 * sizeof(PyObject *)) {
		const PyObject *op = (const PyObject *)((const char *)block + off);
		Py_ssize_t refs = op->ob_refcnt;
		PyTypeObject *t = op->ob_type;

		if (refs < (dying ? 0 : 1) || refs > FRESH_REFS_MAX || !t || (t != likely && !known(t)))
			continue;
		/* (no test of tp_basicsize: a compact str is smaller) */
		if ((size_t)_PyType_PreHeaderSize(t) != off)
			continue;
		if (!dying && PyType_FastSubclass(t, Py_TPFLAGS_TYPE_SUBCLASS))
			hold((PyTypeObject *)op); /* a new class: its objects come next */
		return t;
	}
	return NULL;
}

void header_types_arm(void)
{
	/* the types to walk: object's subclasses, theirs, and so on */
	PyObject *todo = PyList_New(0), *subs;
	PyObject *et, *ev, *tb;
	/* type.__subclasses__ itself: a metaclass's own __subclasses__ is the
	 * program's code, not to be run by a tracer */
	PyObject *subclasses_of;

	PyErr_Fetch(&et, &ev, &tb); /* the program's exception stays its own */
	subclasses_of = PyObject_GetAttrString((PyObject *)&PyType_Type, "__subclasses__");
	if (!todo || !subclasses_of || PyList_Append(todo, (PyObject *)&PyBaseObject_Type) < 0)
		goto out;
	while (PyList_GET_SIZE(todo) > 0) {
		Py_ssize_t last = PyList_GET_SIZE(todo) - 1;
		PyTypeObject *t = (PyTypeObject *)PyList_GET_ITEM(todo, last);

		Py_INCREF(t);
		PyList_SetSlice(todo, last, last + 1, NULL);
		if (hold(t) && (subs = PyObject_CallOneArg(subclasses_of, (PyObject *)t))) {
			for (Py_ssize_t i = 0; i < PyList_GET_SIZE(subs); i++)
				PyList_Append(todo, PyList_GET_ITEM(subs, i));
			Py_DECREF(subs);
		}
		Py_DECREF(t);
	}
out:
	Py_XDECREF(subclasses_of);
	Py_XDECREF(todo);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
}

void header_types_disarm(void)
{
	PyTypeObject **t = held_types;
	size_t c = cap;

	/* emptied first: a type let go may free objects, and with them blocks */
	held_types = NULL;
	cap = n = 0;
	for (size_t i = 0; i < c; i++)
		Py_XDECREF(t[i]);
	free(t);
}
#endif
