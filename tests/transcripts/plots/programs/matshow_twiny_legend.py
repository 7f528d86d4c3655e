# matshow with its x axis on top, and a twin x axis on top of a line plot.
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
A = np.arange(30).reshape(5, 6) % 7
plt.matshow(A, cmap='gray')
plt.title('matshow')
plt.savefig(os.path.join(out, 'matshow.png'), dpi=80)
fig, ax = plt.subplots(figsize=(5, 3.5))
t = np.linspace(0, 10, 50)
ax.plot(t, np.sin(t), label='sin')
ax.set_xlabel('time (s)')
ax2 = ax.twiny()
ax2.plot(t * 60, np.cos(t), 'r--', label='cos')
ax2.set_xlabel('time (min)')
fig.legend(loc='upper right')
fig.savefig(os.path.join(out, 'twiny_legend.png'), dpi=80)
