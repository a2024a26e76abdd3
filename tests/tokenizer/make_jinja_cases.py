"""Writes tests/tokenizer/jinja_cases.json: small templates that exercise one
Jinja feature each, with what jinja2 renders for them in transformers' chat
template environment (transformers' own _compile_jinja_template: sandboxed,
trim_blocks, lstrip_blocks, loop controls, its tojson and raise_exception).
Variables: V below, plus messages/tools/documents None and
add_generation_prompt False, as apply_chat_template passes them.
test_jinja_engine.cpp checks rlf's engine against the file without Python,
so it also runs in the sanitizer build.

usage: <python with transformers and jinja2> tests/tokenizer/make_jinja_cases.py
(the committed file was made with transformers 5.24.0 and jinja2 3.1.6)
"""
import json
import os

import jinja2
import transformers
from transformers.utils.chat_template_utils import _compile_jinja_template, _render_with_assistant_indices

V = {"s": "Hello World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": [1, {"x": None}], "items": "key"},
     "msgs": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
              {"role": "assistant", "content": "A1", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
              {"role": "user", "content": "U2"}],
     "u": "naïve café 東京 🚀", "e": "", "z": 0, "t": True, "no": None, "big": 10 ** 15, "neg": -3, "ws": "  a b\t\n"}

CASES = [
    # whitespace: trim_blocks, lstrip_blocks, -/+ control, comments, raw, trailing newline
    "a\n{% if true %}\nb\n{% endif %}\nc\n",
    "  {% if true %}x{% endif %}  \n  y",
    "a  {%- if true %}  b  {% endif -%}  c",
    "a\n  {%+ if true %}b{% endif %}\n",
    "a\n{% if true +%}\nb{% endif %}",
    "{{ 'x' }}\n{{ 'y' -}}\n  z",
    "a {# c #}\nb\n  {#- d -#}  e",
    "x{% raw %}{{ not }}{% endraw %}y",
    "  {% raw -%}  a  {%- endraw %}  b",
    "\n\n{% for i in l %}\n  {{ i }}\n{% endfor %}\n",
    "line1\r\nline2\rline3\n",
    "{%- for m in msgs -%}\n    {{- m.role }}:{{ m.content }}\n{% endfor -%}",
    # scoping
    "{% set x = 0 %}{% for i in l %}{% set x = x + i %}{{ x }}{% endfor %}/{{ x }}",
    "{% set ns = namespace(total=0) %}{% for i in l %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}",
    "{% if true %}{% set y = 5 %}{% endif %}{{ y }}",
    "{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ s }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(b=4, a=0) }}",
    "{% macro m(a) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}",
    "{% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}inner{{ n }}{% endcall %}",
    "{% macro m() %}{% for x in [1,2] %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) m() %}<{{ v }}>{% endcall %}",
    "{% set blk %}  captured {{ n }} {% endset %}[{{ blk }}]",
    "{% set blk | upper %}abc{% endset %}{{ blk }}",
    "{% filter upper %}hi {{ s }}{% endfilter %}",
    "{% with a = 1, b = n %}{{ a + b }}{% endwith %}{{ a }}",
    "{% set a, b = 1, 2 %}{{ b }}{{ a }}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
    # loops
    "{% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{% endfor %}",
    "{% for i in l %}{{ loop.previtem }}|{{ loop.nextitem }};{% endfor %}",
    "{% for i in l %}{{ loop.cycle('a', 'b') }}{% endfor %}",
    "{% for i in l if i > 1 %}{{ i }}{{ loop.length }}{% endfor %}",
    "{% for i in [] %}x{% else %}empty{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% for c in 'héllo' %}{{ c }}.{% endfor %}",
    "{% for k in d %}{{ k }}{% endfor %}",
    "{% for m in msgs[::-1] %}{{ m.role[0] }}{% endfor %}",
    "{% for a in [[1, 2], [3, 4]] %}{% for b in a %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }}{% endfor %}",
    # expressions and operators
    "{{ 1 + 2 * 3 - 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}",
    "{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 / 3 }} {{ 10 / 5 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-5 }} {{ 123456.789e3 }}",
    "{{ 'a' ~ 1 ~ none ~ true ~ 2.0 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' + 'b' }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}",
    "{{ 'b' in 'abc' }} {{ 2 in l }} {{ 'a' in d }} {{ 'zz' not in d }} {{ 1 if false }}|{{ 1 if false else 2 }}",
    "{{ none or 'x' }} {{ 0 and 'y' }} {{ 'p' and 'q' }} {{ not e }} {{ (1, 2) }} {{ (1,) }} {{ () }}",
    "{{ -n }} {{ +f }} {{ -(1 - 3) }} {{ -neg|abs }}",
    "{{ 'a\\tb\\n\\'q\\' \\x41\\u00e9' }}",
    "{{ \"it's\" }} {{ 'say \"hi\"' }} {{ 'both \\' and \"' }}",
    "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1.5e3 }}",
    "{{ '%s and %d and %.2f and %r' % ('a', 3, 2.5, 'q') }} {{ '%(a)s' % {'a': 1} }} {{ '%5s|%-5s|' % ('x', 'y') }}",
    # python str() and repr() of values
    "{{ l }} {{ d }} {{ none }} {{ true }} {{ [none, 1.0, 'x', \"y'\", {'k': (1, 2)}] }}",
    "{{ [u] }} {{ ['a\\nb', 'tab\\t', '\\x00\\x7f\\xa0\\u2028'] }}",
    "{{ 3.0 }} {{ 100000000000000000.0 }} {{ 1234567890123456.0 }} {{ 0.0001 }} {{ 0.00001234 }} {{ -0.0 }} {{ 1.0e300 * 1e10 }}",
    # subscripts and slices
    "{{ l[0] }} {{ l[-1] }} {{ l[5] }}|{{ l[1:] }} {{ l[:-1] }} {{ l[::2] }} {{ l[::-1] }} {{ l[5:] }} {{ s[::-1] }} {{ u[1:4] }} {{ u[-1] }}",
    "{{ d.b }} {{ d['a'][1]['x'] }} {{ d.a.0 }} {{ d.missing }}|{{ d.items()|list|length }}|{{ d['items'] }}",
    "{{ msgs[2].tool_calls[0].function.arguments.x }} {{ msgs[0]['role'] }}",
    # string methods
    "{{ ws.strip() }}|{{ ws.lstrip() }}|{{ ws.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\na\\n'.lstrip('\\n') }}",
    "{{ s.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  a  b  '.split() }} {{ ' a b '.split(None, 1) }}",
    "{{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }} {{ s.replace('l', 'L') }} {{ s.replace('l', '', 1) }} {{ s.upper() }} {{ s.lower() }}",
    "{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.count('l') }}",
    "{{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'x'.center(5) }}|{{ 'ab'.ljust(4, '*') }}|{{ '42'.zfill(5) }}",
    "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ ' '.isspace() }} {{ 'ABC'.isupper() }} {{ 'abc'.islower() }} {{ ''.isdigit() }}",
    "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'prefix_x'.removeprefix('prefix_') }}",
    "{{ 'Hello {} and {name}'.format('A', name='B') }}",
    "{{ u.upper() }} {{ 'STRASSE ß'.lower() }} {{ 'ß'.upper() }} {{ u|length }}",
    # dict and list methods
    "{{ d.keys()|list }} {{ d.values()|list|length }} {{ d.get('b') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }}",
    "{{ l.index(2) }} {{ l.count(3) }}",
    # filters
    "{{ l|join(', ') }} {{ msgs|map(attribute='role')|join(',') }} {{ msgs|join('|', attribute='content') }}",
    "{{ msgs|selectattr('role', 'equalto', 'user')|list|length }} {{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='content')|list }}",
    "{{ l|select('odd')|list }} {{ l|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }} {{ msgs|selectattr('tool_calls')|list|length }}",
    "{{ l|sort }} {{ l|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ msgs|sort(attribute='content')|map(attribute='content')|join }}",
    "{{ d|dictsort }} {{ {'b': 2, 'a': 1}|dictsort(by='value', reverse=true) }} {{ d|items|list|length }}",
    "{{ l|first }} {{ l|last }} {{ l|length }} {{ l|count }} {{ l|sum }} {{ l|min }} {{ l|max }} {{ [1.5, 2]|sum(start=1) }}",
    "{{ l|reverse|list }} {{ s|reverse }} {{ [1, 2, 2, 'a', 'A']|unique|list }} {{ l|list }} {{ 'ab'|list }}",
    "{{ '  x  '|trim }}|{{ 'xxyxx'|trim('x') }}|{{ s|upper }} {{ s|lower }} {{ 'hello-world foo(bar)'|title }} {{ 'hELLO wORLD'|capitalize }}",
    "{{ s|replace('o', '0') }} {{ s|replace('l', 'L', 2) }} {{ n|string }} {{ none|string }} {{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int(5) }} {{ 4.9|int }} {{ '0x1A'|int(base=16) }}",
    "{{ '3.5'|float }} {{ 'abc'|float }} {{ 2|float }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.1|round(method='ceil') }} {{ 7|round }}",
    "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}",
    "{{ undefined_var|default('dflt') }} {{ e|default('empty', true) }} {{ none|default('nd') }} {{ undefined_var|d }}",
    "{{ '<a href=\"x\">&</a>'|e }} {{ 'x'|safe }} {{ ('<b>'|safe) + '<i>' }} {{ '<i>' + ('<b>'|safe) }}",
    "{{ 'one two  three'|wordcount }} {{ 'a long sentence here'|truncate(9, leeway=0) }} {{ 'a long sentence here'|truncate(9, true, '..', 0) }}",
    "{{ l|batch(2)|list }} {{ l|slice(2)|list }} {{ 'x'|center(5) }}|{{ -5|abs }} {{ d|attr('b') }}|{{ '%s-%s'|format(1, 2) }}",
    "{{ msgs|map('upper')|list|length }} {{ ['a', 'b']|map('upper')|list }} {{ msgs|map(attribute='missing', default='?')|list }}",
    "{{ l|map('string')|join('+') }} {{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }}",
    # tojson as transformers defines it
    "{{ d|tojson }} {{ msgs[2]|tojson }} {{ u|tojson }} {{ [1.0, 1e-7, 1e22, -0.0, true, none]|tojson }}",
    "{{ d|tojson(indent=2) }}",
    "{{ d|tojson(indent=4, sort_keys=true) }}|{{ l|tojson(separators=(',', ':')) }}|{{ u|tojson(ensure_ascii=true) }}|{{ [[], {}]|tojson(indent=2) }}",
    "{{ 'q\"\\\\\\n\\t\\x01\\x7f'|tojson }} {{ {1: 'a', true: 'b', none: 'c'}|tojson }}",
    # tests
    "{{ n is odd }} {{ n is even }} {{ n is divisibleby 7 }} {{ s is string }} {{ n is number }} {{ f is float }} {{ n is integer }} {{ t is integer }}",
    "{{ t is boolean }} {{ no is none }} {{ d is mapping }} {{ l is sequence }} {{ d is sequence }} {{ s is iterable }} {{ n is iterable }} {{ x is undefined }}",
    "{{ t is true }} {{ z is false }} {{ 1 is sameas 1 }} {{ none is sameas none }} {{ 3 is eq 3 }} {{ 3 is gt 2 }} {{ 3 is lt 2 }} {{ 'a' is in 'abc' }}",
    "{{ s is lower }} {{ 'ABC' is upper }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ range is callable }} {{ msgs[2].tool_calls is defined }} {{ msgs[0].tool_calls is not defined }}",
    "{% if msgs[0].content is string and not (msgs[0].content.startswith('<x>')) %}ok{% endif %}",
    # globals
    "{{ dict(a=1, b=[2]) }} {{ dict([('x', 1)]) }} {% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }} {% set j = joiner('|') %}{{ j() }}a{{ j() }}b{{ j() }}",
    "{% set ns = namespace(a=1, b='x') %}{{ ns.a }}{{ ns.b }}{{ ns.c }}|{% set ns.c = [1] %}{{ ns.c }}",
    # undefined behaviour
    "[{{ nope }}]{{ nope|length }}{% for x in nope %}x{% endfor %}{{ nope is defined }}{{ not nope }}{{ nope ~ 'a' }}",
    "{{ nope.attr }}",
    "{{ nope + 1 }}",
    "{{ d.missing.deeper }}",
    "{{ nope() }}",
    "{{ l.append(4) }}",
    "{{ d.update({}) }}",
    "{{ l.append is defined }} {{ d.pop is defined }}",
    "{{ raise_exception('Custom failure: ' ~ n) }}",
    "{% if msgs|length > 3 %}{{ raise_exception('too many messages') }}{% endif %}",
    "{{ range(200000)|length }}",
    "{{ 1 + 'a' }}",
    "{{ 'a' + 1 }}",
    "{{ 1 / 0 }}",
    "{{ [1, 'a']|sort }}",
    "{{ d|tojson(indent=2) }}{{ undefined_var|tojson }}",
    "{{ 'abc'.nosuchmethod() }}",
    "{% for x in 5 %}{% endfor %}",
    "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}",
    "{% set a, b = [1] %}",
    # syntax errors
    "{% if true %}unclosed",
    "{{ 1 + }}",
    "{% endfor %}",
    "{% for x in l %}{% endif %}",
    "{{ a b }}",
    "{% unknowntag %}",
    "{{ x | nosuchfilter }}",
    "{{ 'unterminated }}",
    "{# never closed",
    # generation blocks (transformers' extension)
    "{% for m in msgs %}{{ m.role }}:{% if m.role == 'assistant' %}{% generation %}{{ m.content }}!{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}",
    "{% generation %}first{% endgeneration %}then{% generation %}second{% endgeneration %}",
    "{% generation %}{% set inner = 1 %}{{ inner }}{% endgeneration %}[{{ inner }}]",
]


def main():
    results = []
    for src in CASES:
        try:
            tmpl = _compile_jinja_template(src)
            # as apply_chat_template calls it (messages, tools, documents None here)
            text, spans = _render_with_assistant_indices(tmpl, None, None, None, False, **V)
            out = {"template": src, "text": text,
                   "generation": [[len(text[:b].encode()), len(text[:e].encode())] for b, e in spans]}
        except Exception as e:
            out = {"template": src, "error": type(e).__name__, "message": str(e)}
        results.append(out)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jinja_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"made_with": {"transformers": transformers.__version__, "jinja2": jinja2.__version__},
                   "variables": V, "cases": results}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
