/** The HTML reducer and the entity decoder. */
import t from 'tap';
import { decodeEntities } from '../../../actors/mime-parse/html-entities.ts';
import { htmlToText } from '../../../actors/mime-parse/html-text.ts';

t.test('drops what a reader does not see and keeps the words', async (t) => {
  const html = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Title</title>
    <style type="text/css">p { color: red }</style></head>
    <body><!-- a comment <p>hidden</p> -->
    <script type="text/javascript">var s = "<p>not text</p>";</script>
    <h1>Heading</h1><p>First   paragraph,
    with a <a href="https://example.com/?a=1&amp;b=2" title="x > y">link</a>.</p>
    <table><tr><td>cell one</td><td>cell two</td></tr><tr><td>row two</td></tr></table>
    <ul><li>item a</li><li>item b</li></ul>Tail<br>after break<img src="x.png" alt="alt"></body></html>`;
  t.equal(htmlToText(html), 'Heading\n\nFirst paragraph, with a link.\n\ncell one cell two\nrow two\n\nitem a\nitem b\n\nTail\nafter break');
});

t.test('tolerates broken markup', async (t) => {
  t.equal(htmlToText('a < b and c > d'), 'a < b and c > d', 'a lone < is text');
  t.equal(htmlToText('<p>unclosed <b>bold'), 'unclosed bold');
  t.equal(htmlToText('<head><title>t</title>no closing head<body>Body text'), 'Body text', 'an unclosed head ends at the body');
  t.equal(htmlToText('<script>never closed'), 'never closed', 'an unclosed script drops only its tag');
  t.equal(htmlToText('<p title="it\'s > 3">x</p>'), 'x', 'a > inside a quoted attribute');
  t.equal(htmlToText('<P>Upper<BR>Case</P><SCRIPT>x</SCRIPT>'), 'Upper\nCase');
  t.equal(htmlToText(''), '');
});

t.test('entities: named, numeric, legacy without semicolon, windows-1252 range, unknown', async (t) => {
  t.equal(decodeEntities('&amp;&lt;&gt;&quot;&apos;'), '&<>"\'');
  t.equal(decodeEntities('&eacute;&Eacute;&yuml;&nbsp;&copy;&euro;&mdash;&hellip;&alpha;&Omega;&sigmaf;'), 'éÉÿ\u00a0©€—…αΩς');
  t.equal(decodeEntities('&#233;&#xE9;&#X1F600;&#150;&#0;'), 'éé😀–\ufffd');
  t.equal(decodeEntities('AT&T &nbsp x &amp y &copy 2002'), 'AT&T \u00a0 x & y © 2002');
  t.equal(decodeEntities('&notanentity; &eacutex'), '&notanentity; &eacutex');
  t.equal(htmlToText('x&nbsp;&nbsp;y'), 'x y', 'non-breaking spaces collapse');
});
