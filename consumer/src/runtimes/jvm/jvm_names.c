/*
 * jvm_names.c: HotSpot's internal class names as Java writes them
 * (jvm_names.h). HotSpot names array classes by their field descriptor
 * (JVMS 4.3.2): one '[' per dimension, then a primitive letter or
 * "Lbinary/name;".
 */
#include <stdio.h>
#include <string.h>

#include "runtimes/jvm/jvm_names.h"

static const char *primitive(char c)
{
	switch (c) {
	case 'B': return "byte";
	case 'C': return "char";
	case 'D': return "double";
	case 'F': return "float";
	case 'I': return "int";
	case 'J': return "long";
	case 'S': return "short";
	case 'Z': return "boolean";
	default: return NULL;
	}
}

/* src[0..len) with '/' made '.', appended to dst at *used. */
static void put_dotted(const char *src, size_t len, char *dst, size_t dlen, size_t *used)
{
	for (size_t i = 0; i < len && *used + 1 < dlen; i++)
		dst[(*used)++] = src[i] == '/' ? '.' : src[i];
	dst[*used] = '\0';
}

void vt_java_class_name(const char *internal, char *dst, size_t dlen)
{
	size_t dims = strspn(internal, "["), used = 0, len = strlen(internal);
	const char *elem = internal + dims, *prim;

	if (!dlen)
		return;
	dst[0] = '\0';
	if (!dims) {
		put_dotted(internal, len, dst, dlen, &used);
		return;
	}
	prim = elem[0] && !elem[1] ? primitive(elem[0]) : NULL;
	if (prim)
		put_dotted(prim, strlen(prim), dst, dlen, &used);
	else if (elem[0] == 'L' && len - dims > 2 && internal[len - 1] == ';')
		put_dotted(elem + 1, len - dims - 2, dst, dlen, &used);
	else {
		put_dotted(internal, len, dst, dlen, &used); /* not a descriptor: as it is */
		return;
	}
	for (size_t d = 0; d < dims && used + 2 < dlen; d++) {
		dst[used++] = '[';
		dst[used++] = ']';
	}
	dst[used] = '\0';
}
