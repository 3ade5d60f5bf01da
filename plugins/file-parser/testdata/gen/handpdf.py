#!/usr/bin/env python3
"""Writes hand-made PDFs the way ReportLab and many invoice generators do:
text in the standard 14 fonts (Type 1, WinAnsiEncoding) with no /Widths
array, placed by Td, TD, T*, ', ", Tm, TJ offsets and cm. Usage:
handpdf.py OUTDIR. Each document is a list of pages, each page a list of
content-stream snippets; the texts are written for this set."""
import os, sys, zlib

def esc(s):
    return s.replace('\\', '\\\\').replace('(', '\\(').replace(')', '\\)').encode('cp1252')

def pdf(pages, fonts, extra=b'', acroform=None, annots=None, compress=True):
    objs = []
    def add(b):
        objs.append(b)
        return len(objs)
    font_ids = {}
    for name, base in fonts.items():
        if isinstance(base, bytes):
            font_ids[name] = add(base)
        else:
            font_ids[name] = add(b'<< /Type /Font /Subtype /Type1 /BaseFont /' + base.encode() + b' /Encoding /WinAnsiEncoding >>')
    fres = b'<< ' + b' '.join(b'/' + k.encode() + b' %d 0 R' % v for k, v in font_ids.items()) + b' >>'
    pages_id = len(objs) + 1 + 2 * len(pages) + 1
    page_ids = []
    for i, content in enumerate(pages):
        data = content.encode('latin-1') if isinstance(content, str) else content
        if compress:
            z = zlib.compress(data)
            cid = add(b'<< /Length %d /Filter /FlateDecode >>\nstream\n' % len(z) + z + b'\nendstream')
        else:
            cid = add(b'<< /Length %d >>\nstream\n' % len(data) + data + b'\nendstream')
        an = b''
        if annots and i in annots:
            an = b' /Annots [' + b' '.join(b'%d 0 R' % a for a in annots[i]) + b']'
        page_ids.append(add(b'<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font ' % pages_id + fres + b' >> /Contents %d 0 R' % cid + an + b' >>'))
    # Placeholder numbering: pages_id was reserved after pages.
    while len(objs) < pages_id - 1:
        add(b'null')
    add(b'<< /Type /Pages /Kids [' + b' '.join(b'%d 0 R' % p for p in page_ids) + b'] /Count %d >>' % len(page_ids))
    cat = b'<< /Type /Catalog /Pages %d 0 R' % pages_id
    if acroform:
        cat += b' /AcroForm ' + acroform
    root = add(cat + b' >>')
    out = bytearray(b'%PDF-1.4\n%\xe2\xe3\xcf\xd3\n')
    offs = []
    for i, o in enumerate(objs):
        offs.append(len(out))
        out += b'%d 0 obj\n' % (i + 1) + o + b'\nendobj\n'
    x = len(out)
    out += b'xref\n0 %d\n0000000000 65535 f \n' % (len(objs) + 1)
    for o in offs:
        out += b'%010d 00000 n \n' % o
    out += b'trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n' % (len(objs) + 1, root, x)
    return bytes(out)

def tj(s):
    return '(' + esc(s).decode('latin-1') + ') Tj'

def invoice():
    c = ['BT /F2 18 Tf 72 740 Td ' + tj('Invoice 2024-117') + ' ET']
    c.append('BT /F1 10 Tf 72 712 Td 12 TL ' + tj('Northwind Traders Ltd.') + ' T* ' + tj('14 Harbour Road, Leith') + ' T* ' + tj('Edinburgh EH6 6LX') + ' ET')
    rows = [('Item', 'Qty', 'Unit price', 'Total'), ('Oak dining table', '1', '640.00', '640.00'),
            ('Chair, ladder back', '6', '85.50', '513.00'), ('Delivery and assembly', '1', '45.00', '45.00')]
    y = 640
    for r, row in enumerate(rows):
        font = '/F2' if r == 0 else '/F1'
        for x, cell in zip((72, 300, 360, 460), row):
            c.append('BT %s 10 Tf 1 0 0 1 %d %d Tm %s ET' % (font, x, y, tj(cell)))
        y -= 16
    c.append('BT /F2 11 Tf 1 0 0 1 360 %d Tm ' % (y - 10) + tj('Amount due') + ' ET')
    c.append('BT /F2 11 Tf 1 0 0 1 460 %d Tm ' % (y - 10) + tj('1198.00') + ' ET')
    c.append('BT /F1 9 Tf 72 %d Td 11 TL ' % (y - 60) + tj('Payment within thirty days of the invoice date.') +
             " (Bank transfer to the account shown overleaf.) ' (Thank you for your custom.) ' ET")
    return [' '.join(c)]

def weather():
    c = ['BT /F2 14 Tf 72 740 Td ' + tj('Weather stations, March') + ' ET']
    rows = [('Station', 'Rainfall (mm)', 'Max temp (\xb0C)', 'Min temp (\xb0C)'),
            ('Aberdeen', '61.2', '9.8', '2.1'), ('Bristol', '74.0', '12.3', '4.4'),
            ('Cardiff', '98.7', '11.9', '4.0'), ('Dundee', '55.3', '9.1', '1.7')]
    y = 700
    for r, row in enumerate(rows):
        for x, cell in zip((72, 180, 290, 400), row):
            # Each cell as ReportLab's Table draws it: a translation by cm
            # and text at the origin.
            c.append('q 1 0 0 1 %d %d cm BT %s 10 Tf 0 0 Td %s ET Q' % (x, y, '/F2' if r == 0 else '/F1', tj(cell)))
        y -= 18
    c.append('BT /F3 10 Tf 14 TL 72 560 Td ' + tj('Left cell') + ' 0 0 Td ET BT /F3 10 Tf 300 560 Td ' + tj('Right cell') + ' ET')
    c.append('BT /F1 11 Tf 13 TL 72 520 Td ' + tj('Line one') + ' T* ' + tj('Line two') + " T* (Line three, set by T*.) Tj 2 1 (Line four, set by the double quote operator.) \" ET")
    c.append('BT /F1 11 Tf 72 470 Td [(Words)-280(placed)-300(by)-260(TJ)-290(offsets,)-250(not)-270(spaces.)] TJ ET')
    c.append('BT /F1 11 Tf 0 1 -1 0 560 300 Tm ' + tj('Rotated margin note') + ' ET')
    return [' '.join(c)]

def letter():
    p1 = ['BT /F1 11 Tf 14 TL 72 720 Td']
    paras = [["Dear Ms Okafor,"],
             ["Thank you for your letter of the fourth of May. We have looked into the",
              "delay to your order and found that the parcel was held at the depot for",
              "three days because the label was damaged in transit."],
             ["A replacement has been sent by courier and should reach you on Friday.",
              "We have refunded the delivery charge of 6.95 to your card."],
             ["Yours sincerely,"], ["Priya Raman, Customer Care"]]
    for i, para in enumerate(paras):
        for j, line in enumerate(para):
            p1.append(tj(line) + ' T*')
        p1.append('0 -10 Td')
    p1.append('ET')
    p2 = 'BT /F2 12 Tf 72 720 Td (Reference) Tj /F1 12 Tf 0 -20 TD (Order 55-2190, placed on 28 April.) Tj T* (Courier: Fast Parcel, tracking FP 0099 4411.) Tj ET'
    return [' '.join(p1), p2]

def memo():
    c = ['BT /F2 13 Tf 1 0 0 1 72 730 Tm (Memo: kitchen refit) Tj ET',
         'q 0.5 0 0 0.5 36 300 cm BT /F1 22 Tf 72 800 Td 26 TL (The fitters start on Monday and expect to finish) Tj T* (within two weeks; the kitchen will be closed meanwhile.) Tj ET Q',
         'BT /F1 11 Tf 72 600 Td 10 Tc (SPACED) Tj 0 Tc 0 -16 Td 3 Tw (Word spacing widens these few words.) Tj 0 Tw ET',
         'BT /F1 11 Tf 72 560 Td 80 Tz (Condensed text at eighty percent.) Tj 100 Tz ET',
         'BT /F1 11 Tf 72 540 Td (E = mc) Tj 5 Ts (2) Tj 0 Ts ( as a superscript.) Tj ET']
    return [' '.join(c)]

FONTS = {'F1': 'Helvetica', 'F2': 'Helvetica-Bold', 'F3': 'Times-Roman'}
FONTS_T = {'F1': 'Times-Roman', 'F2': 'Times-Bold', 'F3': 'Courier'}

def main(out):
    os.makedirs(os.path.join(out, 'heldout'), exist_ok=True)
    open(os.path.join(out, 'hand-invoice.pdf'), 'wb').write(pdf(invoice(), FONTS))
    open(os.path.join(out, 'hand-weather.pdf'), 'wb').write(pdf(weather(), FONTS))
    open(os.path.join(out, 'heldout', 'hand-letter.pdf'), 'wb').write(pdf(letter(), FONTS_T))
    open(os.path.join(out, 'heldout', 'hand-memo.pdf'), 'wb').write(pdf(memo(), FONTS_T, compress=False))

if __name__ == '__main__':
    main(sys.argv[1])
