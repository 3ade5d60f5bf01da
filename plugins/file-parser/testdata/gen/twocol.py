#!/usr/bin/env python3
"""Writes two-column PDFs the way a generator that draws by baseline does:
each row of the page is drawn across both columns (left line, then the
right line on the same baseline), so in stream order the columns are
interleaved line by line. A title spans both columns at the top and a
footer at the bottom. Usage: twocol.py OUTDIR (writes
twocol-hand-bulletin.pdf and heldout/twocol-hand-almanac.pdf). The texts
were written for this set; lines are wrapped by a character count that
keeps each line inside its column (Helvetica 10 pt, column 234 pt)."""
import os, sys, textwrap
from handpdf import pdf, tj

FONTS = {'F1': 'Helvetica', 'F2': 'Helvetica-Bold'}

def page(title, left, right, footer):
    c = ['BT /F2 16 Tf 1 0 0 1 72 740 Tm ' + tj(title) + ' ET']
    def lines(paras):
        out = []
        for i, p in enumerate(paras):
            if i:
                out.append('')
            out += textwrap.wrap(p, 42)
        return out
    l, r = lines(left), lines(right)
    y = 708
    for i in range(max(len(l), len(r))):
        for x, col in ((72, l), (330, r)):
            if i < len(col) and col[i]:
                c.append('BT /F1 10 Tf 1 0 0 1 %d %d Tm %s ET' % (x, y, tj(col[i])))
        y -= 12
    c.append('BT /F1 8 Tf 1 0 0 1 72 60 Tm ' + tj(footer) + ' ET')
    return ' '.join(c)

BULLETIN = [page('Village bulletin, spring edition',
    ["The village hall roof was repaired over the winter, and the hall is open again for bookings from the first of April. The committee thanks everyone who gave time or money to the appeal.",
     "Bookings are taken by the caretaker on weekday mornings. Children's parties pay half the usual rate, and the hall kitchen may be hired on its own for small gatherings.",
     "The spring market returns on the second Saturday of May, with stalls for plants, cakes, books and local honey. Pitches cost five pounds and must be booked in advance."],
    ["News from the parish council, in brief, for everyone on the lanes.",
     "The footpath along the river between the mill and the church has been resurfaced. Walkers are asked to keep dogs on a lead near the sheep fields, where lambs are now out.",
     "Our new bus timetable starts next month. The early bus to town leaves at ten to seven, and a late service on Fridays returns from the station at eleven at night.",
     "Volunteers are needed for the litter pick on Easter Monday. Meet at the green at ten; gloves, bags and tea will be provided by the parish council."],
    'Printed for the parish council. Page 1.')]

ALMANAC = [page('Gardeners\u2019 almanac for June',
    ["June is the month to thin the carrots and beetroot sown in spring. Water in the evening, when less is lost to the sun, and mulch the rows to keep the soil cool and moist.",
     "Pinch out the side shoots of tomatoes each week and tie the main stem to its cane. Feed them every ten days once the first truss has set its fruit.",
     "Lift early potatoes when the flowers open; dig one plant first to see whether the tubers are large enough to be worth the harvest."],
    ["Net the strawberries against birds and lay straw under the fruit so that it stays clean. Runners not wanted for new plants should be cut off close to the crown.",
     "Roses benefit from deadheading as the first flush fades. Cut back to a strong leaf and give a handful of feed to encourage a second show in late summer.",
     "Keep an eye on the water butts: a dry fortnight empties them quickly, and a cover keeps out leaves and the mosquitoes that breed in still water."],
    'Allotment society newsletter. Page 1.'),
    page('Gardeners\u2019 almanac, continued',
    ["Sow the last row of lettuce and radish for late summer salads. A shaded bed suits them better than an open one in the heat of July.",
     "Hedges may be trimmed once the birds have finished nesting; look carefully before cutting, and leave the work until August if in doubt."],
    ["The society's show is held on the last Saturday of August. Entry forms are in the hut, and the schedule lists classes for vegetables, flowers, jam and photographs.",
     "Members may borrow the rotavator for a day at a time. Please clean it before returning it and note any fault in the book by the door."],
    'Allotment society newsletter. Page 2.')]

def main(out):
    os.makedirs(os.path.join(out, 'heldout'), exist_ok=True)
    open(os.path.join(out, 'twocol-hand-bulletin.pdf'), 'wb').write(pdf(BULLETIN, FONTS))
    open(os.path.join(out, 'heldout', 'twocol-hand-almanac.pdf'), 'wb').write(pdf(ALMANAC, FONTS))

if __name__ == '__main__':
    main(sys.argv[1])
