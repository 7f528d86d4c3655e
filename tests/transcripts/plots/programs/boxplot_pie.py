# A boxplot (quartiles, whiskers at 1.5 IQR, a flier) beside a pie with autopct (compare with matplotlib).
import os
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
data = [[1, 2, 3, 4, 5, 6, 7, 8, 9, 30], [2, 3, 4, 5, 6], [1, 1, 2, 2, 10, 11]]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
r = ax1.boxplot(data, tick_labels=['a', 'b', 'c'])
ax1.set_title('boxplot')
wedges, texts, autotexts = ax2.pie([3, 2, 1], labels=['A', 'B', 'C'], autopct='%1.1f%%', startangle=90)
ax2.set_title('pie')
fig.savefig(os.path.join(out, 'boxplot_pie.png'), dpi=80)
print({k: len(v) for k, v in r.items()}, ax1.get_xlim(), ax1.get_ylim())
print([t.get_text() for t in autotexts])
