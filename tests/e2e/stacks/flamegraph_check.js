// flamegraph_check.js PAGE FOLDED: runs the scripts of a `vmtrace report
// --format flamegraph` page against a small stand-in for the DOM and checks
// what a user would see against the folded output of the same record: the
// total, every frame drawn, a search's share, a click's zoom.
'use strict';
const fs = require('fs');
const vm = require('vm');
const [page, foldedPath] = process.argv.slice(2);
const html = fs.readFileSync(page, 'utf8');
const fail = (m) => { console.error('FAIL: ' + m); process.exit(1); };

if (/<(script|link|img)[^>]+(src|href)=/i.test(html)) fail('the page loads something from outside');
const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
if (scripts.length < 2) fail('no inline data and script');

const folded = fs.readFileSync(foldedPath, 'utf8').trim().split('\n').map((l) => {
	const i = l.lastIndexOf(' ');
	return [l.slice(0, i).split(';'), Number(l.slice(i + 1))];
});
const total = folded.reduce((s, [, n]) => s + n, 0);

function el(id) {
	return { id, children: [], style: {}, value: '', textContent: '', clientWidth: 1000,
		set innerHTML(v) { this.children = []; },
		appendChild(c) { this.children.push(c); } };
}
const els = { fg: el('fg'), info: el('info'), q: el('q'), reset: el('reset') };
const ctx = { document: { getElementById: (id) => els[id],
			  createElement: () => ({ style: {}, className: '', textContent: '', title: '' }) },
	      window: {} };
vm.createContext(ctx);
scripts.forEach((s) => vm.runInContext(s, ctx));

const boxes = () => els.fg.children;
const named = (n) => boxes().filter((b) => b.title.split(' (')[0].split('\n')[0] === n);
if (ctx.data[1] !== total) fail(`page total ${ctx.data[1]}, folded total ${total}`);
const root = named('all')[0];
if (!root || parseFloat(root.style.width) !== 1000) fail('no full-width root frame');
// every frame of every stack is drawn somewhere (wide enough ones)
for (const [frames] of folded)
	for (const f of frames)
		if (!named(f).length) fail(`frame ${f} not drawn`);

// search: the share of the stacks that pass through the frame
const frame = 'Tree#grow';
const want = folded.filter(([fs]) => fs.includes(frame)).reduce((s, [, n]) => s + n, 0);
els.q.value = frame;
els.q.oninput();
const m = /^matched: (\d+) /.exec(els.info.textContent);
if (!m || Number(m[1]) !== want) fail(`search ${frame}: '${els.info.textContent}', want ${want}`);
if (!boxes().some((b) => / m$/.test(b.className))) fail('search marked no frame');

// click: the frame takes the whole width
els.q.value = '';
named('Tree#build')[0].onclick();
const zoomed = named('Tree#build')[0];
if (!zoomed || parseFloat(zoomed.style.width) !== 1000) fail('click did not zoom into Tree#build');
console.log(`flame graph: ${total} in ${boxes().length} frames after zoom; search ${frame}: ${want}`);
