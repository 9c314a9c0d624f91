import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { awaitHttp, spawnApp, stopApp, type AppProcess } from './app-process.js';

/**
 * The Django admin, as Debian packages Django (`apt-get install python3-django`), for one test
 * file: a small project written into a temporary folder (a settings module, an `invoices` app
 * with one model registered in the stock admin, and a `ledger` app of 38 bare models so that the
 * admin's navigation is as long as an office's), migrated into SQLite,
 * with one staff user, served by Django's own WSGI server on loopback. `stop` ends its process
 * group and removes the folder.
 *
 * Always Debian's interpreter (`/usr/bin/python3`): the `python3` on PATH may be another one,
 * without Django. The server is Django's development server (`django.core.servers.basehttp`,
 * what `runserver` runs) on port 0, so no port can be taken in between; it prints the port it got.
 */

const PYTHON = '/usr/bin/python3';
const BOOT_TIMEOUT_MS = 90_000;
const run = promisify(execFile);

export interface DjangoInvoice {
  id: number;
  vendor: string;
  reference: string;
  /** As Django keeps it: a decimal with two places, as text (`1234.50`). */
  amount: string;
  /** YYYY-MM-DD */
  issued: string;
  notes: string;
  paid: boolean;
}

export interface DjangoAdmin {
  /** `http://{host}:{port}` */
  origin: string;
  host: string;
  hostRules: string;
  /** The staff user's name and password. */
  user: { username: string; password: string };
  /** Every invoice Django saved, by id (read with `manage.py shell`). */
  invoices(): Promise<DjangoInvoice[]>;
  /** Every request the server answered (`METHOD path status`), in order. */
  readonly hits: string[];
  stop(): Promise<void>;
}

export function djangoMissing(): string | undefined {
  if (!existsSync('/usr/lib/python3/dist-packages/django/__init__.py')) return 'Django is not installed for /usr/bin/python3: apt-get install python3-django (.ci/run does)';
  return undefined;
}

const LEDGER_MODELS = [
  'Account', 'AccountGroup', 'Asset', 'BankAccount', 'BankStatement', 'Budget', 'BudgetLine', 'CostCentre', 'CreditNote', 'Currency',
  'Customer', 'CustomerContact', 'DebitNote', 'Depreciation', 'Employee', 'ExchangeRate', 'ExpenseClaim', 'FiscalYear', 'Journal', 'JournalEntry',
  'Ledger', 'Payment', 'PaymentTerm', 'Payroll', 'PurchaseOrder', 'PurchaseOrderLine', 'Quote', 'Receipt', 'Reconciliation', 'SalesOrder',
  'SalesOrderLine', 'Supplier', 'SupplierContact', 'TaxCode', 'TaxReturn', 'Timesheet', 'Transfer', 'Warehouse',
];

const FILES: Record<string, string> = {
  'manage.py': `import os, sys
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'office.settings')
from django.core.management import execute_from_command_line
execute_from_command_line(sys.argv)
`,
  'office/__init__.py': '',
  'office/settings.py': `import os
BASE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRET_KEY = 'test-only-not-a-secret-' + 'x' * 40
DEBUG = True
ALLOWED_HOSTS = ['*']
INSTALLED_APPS = ['django.contrib.admin', 'django.contrib.auth', 'django.contrib.contenttypes', 'django.contrib.sessions', 'django.contrib.messages', 'django.contrib.staticfiles', 'ledger', 'invoices']
MIDDLEWARE = ['django.middleware.security.SecurityMiddleware', 'django.contrib.sessions.middleware.SessionMiddleware', 'django.middleware.common.CommonMiddleware', 'django.middleware.csrf.CsrfViewMiddleware', 'django.contrib.auth.middleware.AuthenticationMiddleware', 'django.contrib.messages.middleware.MessageMiddleware', 'django.middleware.clickjacking.XFrameOptionsMiddleware']
ROOT_URLCONF = 'office.urls'
TEMPLATES = [{'BACKEND': 'django.template.backends.django.DjangoTemplates', 'DIRS': [], 'APP_DIRS': True, 'OPTIONS': {'context_processors': ['django.template.context_processors.debug', 'django.template.context_processors.request', 'django.contrib.auth.context_processors.auth', 'django.contrib.messages.context_processors.messages']}}]
DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': os.path.join(BASE_DIR, 'db.sqlite3')}}
DEFAULT_AUTO_FIELD = 'django.db.models.AutoField'
LANGUAGE_CODE = 'en-us'
TIME_ZONE = 'UTC'
USE_I18N = True
USE_L10N = False
USE_TZ = True
STATIC_URL = '/static/'
`,
  'office/urls.py': `from django.contrib import admin
from django.urls import path
urlpatterns = [path('admin/', admin.site.urls)]
`,
  'office/serve.py': `import os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'office.settings')
import django
django.setup()
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application

class Handler(WSGIRequestHandler):
    def log_message(self, format, *args):
        # One line per request on stdout, for the test: METHOD path status.
        if len(args) >= 2:
            print('hit ' + str(args[0]).rsplit(' ', 1)[0] + ' ' + str(args[1]), flush=True)

httpd = ThreadedWSGIServer(('127.0.0.1', 0), Handler)
httpd.set_app(StaticFilesHandler(get_wsgi_application()))
print('listening %d' % httpd.server_address[1], flush=True)
httpd.serve_forever()
`,
  'invoices/__init__.py': '',
  'invoices/apps.py': `from django.apps import AppConfig
class InvoicesConfig(AppConfig):
    name = 'invoices'
`,
  'invoices/models.py': `from django.db import models

class Invoice(models.Model):
    vendor = models.CharField(max_length=200)
    reference = models.CharField('vendor reference', max_length=60)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    issued = models.DateField('issued on')
    notes = models.TextField(blank=True)
    paid = models.BooleanField(default=False)

    def __str__(self):
        return 'Invoice #%s from %s' % (self.pk, self.vendor)
`,
  'invoices/admin.py': `from django.contrib import admin
from .models import Invoice

@admin.register(Invoice)
class InvoiceAdmin(admin.ModelAdmin):
    list_display = ('__str__', 'reference', 'amount', 'issued', 'paid')
`,
  'invoices/migrations/__init__.py': '',
  // The rest of an office's admin: enough models that its navigation is longer than a read's 4,000 characters.
  'ledger/__init__.py': '',
  'ledger/apps.py': `from django.apps import AppConfig
class LedgerConfig(AppConfig):
    name = 'ledger'
`,
  'ledger/models.py': `from django.db import models

NAMES = ${JSON.stringify(LEDGER_MODELS)}

for _name in NAMES:
    globals()[_name] = type(_name, (models.Model,), {'__module__': __name__, 'title': models.CharField(max_length=100), '__str__': lambda self: self.title})
`,
  'ledger/admin.py': `from django.apps import apps
from django.contrib import admin
for model in apps.get_app_config('ledger').get_models():
    admin.site.register(model)
`,
  'ledger/migrations/__init__.py': '',
};

/** The invoices as JSON, one shell command. */
const LIST = `import json
from invoices.models import Invoice
print(json.dumps([{'id': i.pk, 'vendor': i.vendor, 'reference': i.reference, 'amount': str(i.amount), 'issued': i.issued.isoformat(), 'notes': i.notes, 'paid': i.paid} for i in Invoice.objects.order_by('pk')]))`;

export async function startDjangoAdmin(options: { host?: string; seed?: Array<Omit<DjangoInvoice, 'id'>> } = {}): Promise<DjangoAdmin> {
  const missing = djangoMissing();
  if (missing) throw new Error(missing);
  const host = options.host ?? 'admin.test';
  const dir = await mkdtemp(path.join(os.tmpdir(), 'django-admin-'));
  const user = { username: 'clerk', password: 'Ledger-7-Quill' };
  // Debian's Python, with nothing of the caller's Python environment in the way.
  const env = { PYTHONPATH: dir, PYTHONNOUSERSITE: '1', DJANGO_SETTINGS_MODULE: 'office.settings', PYTHONDONTWRITEBYTECODE: '1' };
  const manage = (...args: string[]) => run(PYTHON, [path.join(dir, 'manage.py'), ...args], { cwd: dir, env: { ...process.env, ...env }, timeout: 120_000 });
  let app: AppProcess | undefined;
  try {
    for (const [file, text] of Object.entries(FILES)) {
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await writeFile(path.join(dir, file), text);
    }
    await manage('makemigrations', 'invoices', 'ledger', '--noinput');
    await manage('migrate', '--noinput');
    await run(PYTHON, [path.join(dir, 'manage.py'), 'createsuperuser', '--noinput', '--username', user.username, '--email', 'clerk@office.test'], {
      cwd: dir,
      env: { ...process.env, ...env, DJANGO_SUPERUSER_PASSWORD: user.password },
      timeout: 120_000,
    });
    if (options.seed && options.seed.length > 0) {
      const rows = JSON.stringify(options.seed);
      await manage('shell', '-c', `import json\nfrom invoices.models import Invoice\nfor r in json.loads(${JSON.stringify(rows)}): Invoice.objects.create(**r)`);
    }
    app = spawnApp('django-admin', PYTHON, [path.join(dir, 'office', 'serve.py')], { cwd: dir, env });
    const port = await app.waitForLine('listen', (line) => /^listening (\d+)$/.exec(line)?.[1], BOOT_TIMEOUT_MS);
    await awaitHttp(`http://127.0.0.1:${port}/admin/login/`, BOOT_TIMEOUT_MS, app);
    const server = app;
    return {
      origin: `http://${host}:${port}`,
      host,
      hostRules: `MAP ${host} 127.0.0.1`,
      user,
      get hits() {
        return server.lines.filter((l) => l.startsWith('hit '));
      },
      async invoices() {
        const { stdout } = await manage('shell', '-c', LIST);
        return JSON.parse(stdout.trim().split('\n').at(-1)!) as DjangoInvoice[];
      },
      stop: () => stopApp(server, dir),
    };
  } catch (error) {
    await stopApp(app, dir);
    throw error;
  }
}
