/*
 * report_flamegraph.c: one self-contained interactive flame graph, HTML
 * with its data and a small script inline (no network): the allocations
 * as a tree of their stacks, root at the bottom, each allocation's class as
 * its leaf; widths are the --sort number (count or bytes). Click a frame
 * to zoom into it (the frames below stay, to zoom out again), type in the
 * search box to mark every frame whose name contains the text and see
 * their share. Rows without a stack stand on their method.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_fmt.h"
#include "report/report_model.h"

struct node {
	const char *name;            /* the profile's */
	const char *where;           /* "file:line" or NULL */
	int64_t line;
	uint64_t value;
	struct node *child, *next, *parent;
};

/* Every node of the tree, found by (parent, name, where, line) in an
 * open-addressing table, so a tree of n frames is built in O(n) however
 * many children one node has. */
struct tree {
	struct node root;
	struct node **slot;
	size_t cap, n;                /* cap a power of two, at least twice n */
};

static uint64_t node_hash(const struct node *parent, const char *name, const char *where,
			  int64_t line)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)parent;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ULL;
	h = (h ^ 0xff) * 0x100000001b3ULL;
	for (const unsigned char *c = (const unsigned char *)(where ? where : ""); *c; c++)
		h = (h ^ *c) * 0x100000001b3ULL;
	h = (h ^ (uint64_t)line) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

static void put_slot(struct tree *t, struct node *n)
{
	size_t pos = node_hash(n->parent, n->name, n->where, n->line) & (t->cap - 1);

	while (t->slot[pos])
		pos = (pos + 1) & (t->cap - 1);
	t->slot[pos] = n;
}

static int tree_grow(struct tree *t)
{
	struct node **old = t->slot;
	size_t ocap = t->cap;

	t->cap = ocap ? ocap * 2 : 1024;
	t->slot = calloc(t->cap, sizeof(*t->slot));
	if (!t->slot) {
		t->slot = old;
		t->cap = ocap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < ocap; i++)
		if (old[i])
			put_slot(t, old[i]);
	free(old);
	return 0;
}

static struct node *child_of(struct tree *t, struct node *parent, const char *name,
			     const char *file, int64_t line)
{
	const char *where = file && *file ? file : NULL;
	struct node *n;

	if (2 * (t->n + 1) > t->cap && tree_grow(t))
		return NULL;
	for (size_t pos = node_hash(parent, name, where, line) & (t->cap - 1); (n = t->slot[pos]);
	     pos = (pos + 1) & (t->cap - 1))
		if (n->parent == parent && n->line == line && !strcmp(n->name, name) &&
		    !strcmp(n->where ? n->where : "", where ? where : ""))
			return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->name = name;
	n->where = where;
	n->line = line;
	n->parent = parent;
	n->next = parent->child;
	parent->child = n;
	put_slot(t, n);
	t->n++;
	return n;
}

static void free_tree(struct node *n)
{
	while (n) {
		struct node *next = n->next;

		free_tree(n->child);
		free(n);
		n = next;
	}
}

/* [name, value, where, [children...]] */
static void put_node(FILE *out, const struct node *n)
{
	fputc('[', out);
	vt_json_string_in(out, n->name, true);
	fprintf(out, ",%llu,", (unsigned long long)n->value);
	if (n->where) {
		size_t len = strlen(n->where) + 24;
		char *where = malloc(len);

		if (where) {
			snprintf(where, len, n->line ? "%s:%lld" : "%s", n->where, (long long)n->line);
			vt_json_string_in(out, where, true);
			free(where);
		} else {
			vt_json_string_in(out, n->where, true);
		}
	} else {
		fputs("\"\"", out);
	}
	fputs(",[", out);
	for (const struct node *c = n->child; c; c = c->next) {
		put_node(out, c);
		if (c->next)
			fputc(',', out);
	}
	fputs("]]", out);
}

static const char page_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<title>vmtrace: allocations</title>\n<style>\n"
	"body{font:12px sans-serif;margin:8px;background:#fff;color:#222}\n"
	"#bar{display:flex;gap:8px;align-items:center;margin-bottom:6px}\n"
	"#bar input{flex:0 0 20em}#info{flex:1;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}\n"
	"#fg{position:relative;width:100%}\n"
	".f{position:absolute;height:17px;line-height:17px;overflow:hidden;white-space:nowrap;"
	"box-sizing:border-box;border:1px solid #fff;padding:0 3px;cursor:pointer;border-radius:2px}\n"
	".f:hover{border-color:#000}.m{background:#e040e0 !important}.dim{opacity:.45}\n"
	"</style></head><body>\n";

static const char page_script[] =
	"<script>\n"
	"(function(){\n"
	"var fg=document.getElementById('fg'),info=document.getElementById('info'),"
	"q=document.getElementById('q'),H=18,zoom=null,total=data[1];\n"
	"function hue(s){var h=0;for(var i=0;i<s.length;i++)h=(h*31+s.charCodeAt(i))>>>0;return h;}\n"
	"function color(n){var h=hue(n[0]);return n[3].length?'hsl('+(10+h%40)+',85%,'+(55+h%15)+'%)'"
	":'hsl('+(200+h%30)+',60%,'+(65+h%10)+'%)';}\n"
	"function depth(n){var d=0;n[3].forEach(function(c){d=Math.max(d,depth(c));});return d+1;}\n"
	"function path(n,want,acc){if(n===want)return acc.concat([n]);for(var i=0;i<n[3].length;i++){"
	"var p=path(n[3][i],want,acc.concat([n]));if(p)return p;}return null;}\n"
	"function draw(){\n"
	" var root=zoom||data,above=zoom?path(data,zoom,[]):[data],W=fg.clientWidth,rows=above.length-1+depth(root);\n"
	" fg.innerHTML='';fg.style.height=(rows*H)+'px';var re=q.value;\n"
	" function box(n,x,w,level,dim){if(w<1)return;var d=document.createElement('div');d.className='f'+(dim?' dim':'');\n"
	"  if(re&&n[0].indexOf(re)>=0)d.className+=' m';d.style.left=x+'px';d.style.width=w+'px';\n"
	"  d.style.top=((rows-1-level)*H)+'px';d.style.background=color(n);d.textContent=w>30?n[0]:'';\n"
	"  var pct=(100*n[1]/total).toFixed(2);d.title=n[0]+(n[2]?' ('+n[2]+')':'')+'\\n'+n[1]+' '+unit+' ('+pct+'%)';\n"
	"  d.onclick=function(){zoom=n===data?null:n;draw();};d.onmouseover=function(){info.textContent=d.title.replace('\\n',': ');};\n"
	"  fg.appendChild(d);return d;}\n"
	" for(var i=0;i<above.length-1;i++)box(above[i],0,W,i,true);\n"
	" (function lay(n,x,w,level){box(n,x,w,level,false);var cx=x;n[3].slice().sort(function(a,b){"
	"return a[0]<b[0]?-1:a[0]>b[0];}).forEach(function(c){var cw=w*c[1]/n[1];lay(c,cx,cw,level+1);cx+=cw;});})"
	"(root,0,W,above.length-1);\n"
	" if(re){var m=0;(function sum(n,inside){var hit=!inside&&n[0].indexOf(re)>=0;if(hit)m+=n[1];"
	"n[3].forEach(function(c){sum(c,inside||hit);});})(data,false);\n"
	"  info.textContent='matched: '+m+' '+unit+' ('+(100*m/total).toFixed(2)+'%)';}\n"
	"}\n"
	"q.oninput=draw;document.getElementById('reset').onclick=function(){zoom=null;q.value='';draw();};\n"
	"window.onresize=draw;draw();\n"
	"})();\n</script>\n</body></html>\n";

int vt_report_flamegraph(FILE *out, const struct vt_profile *p, const struct vt_report_opts *o)
{
	struct tree t = { .root = { .name = "all" } };
	struct node *root = &t.root;
	bool bytes = o->sort == VT_SORT_BYTES;
	int err = 0;

	for (size_t i = 0; i < p->allocs.n && !err; i++) {
		const struct vt_alloc *a = &p->allocs.v[i];
		uint64_t w = bytes ? a->bytes : a->count;
		struct node *n = root;

		if (!w)
			continue;
		n->value += w;
		if (a->stack) {
			const struct vt_stack *s = &p->stacks.v[a->stack - 1];

			if (s->cut && (n = child_of(&t, n, "[cut]", NULL, 0)))
				n->value += w;
			for (uint32_t f = 0; n && f < s->depth; f++)
				if ((n = child_of(&t, n, s->frames[f].name, s->frames[f].file, s->frames[f].line)))
					n->value += w;
		} else if ((n = child_of(&t, n, a->method, NULL, 0))) {
			n->value += w;
		}
		if (n && (n = child_of(&t, n, a->klass, NULL, 0)))
			n->value += w;
		if (!n)
			err = -ENOMEM;
	}
	if (!err) {
		fputs(page_head, out);
		fputs("<div id=\"bar\"><b>vmtrace</b><span>", out);
		fprintf(out, "%s allocated by stack, pid %d",
			bytes ? "bytes" : "objects", (int)p->pid);
		fputs("</span><input id=\"q\" placeholder=\"search frames\" aria-label=\"search\">"
		      "<button id=\"reset\">reset zoom</button><span id=\"info\"></span></div>\n"
		      "<div id=\"fg\"></div>\n<script>\nvar unit=", out);
		vt_json_string_in(out, bytes ? "bytes" : "objects", true);
		fputs(";\nvar data=", out);
		put_node(out, root);
		fputs(";\n</script>\n", out);
		fputs(page_script, out);
	}
	free_tree(root->child);
	free(t.slot);
	return err;
}
